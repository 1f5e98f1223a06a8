# fixture: fix of the PME cache report: the calculator builds its k-vectors from each call's cell instead of reusing the first call's, so each backward walks its own graph
# source: https://github.com/lab-cosmo/torch-pme/issues/62
# torch: ok
# strict: ok

import math

import torch


def generate_kvectors(cell, ns):
    basis = 2.0 * math.pi / (cell * torch.eye(3)).sum(dim=1)  # orthorhombic reciprocal basis
    n = torch.arange(1, ns + 1).float()
    return n[:, None] * basis[None, :]


class PMEPotential(torch.nn.Module):
    def __init__(self, atomic_smearing, ns=4):
        super().__init__()
        self.atomic_smearing = atomic_smearing
        self.ns = ns

    def _kvectors(self, cell):
        # no cache: the k-vectors are rebuilt from the cell given to this call
        return generate_kvectors(cell, self.ns)

    def forward(self, positions, charges, cell):
        kvectors = self._kvectors(cell)
        k2 = (kvectors ** 2).sum(dim=1)
        phases = positions @ kvectors.t()
        re = (charges * torch.cos(phases)).sum(dim=0)
        im = (charges * torch.sin(phases)).sum(dim=0)
        weights = torch.exp(-0.5 * self.atomic_smearing ** 2 * k2) / k2
        return charges * (torch.cos(phases) * (weights * re) + torch.sin(phases) * (weights * im)).sum(dim=1, keepdim=True)


torch.manual_seed(0)
calculator = PMEPotential(atomic_smearing=1.1)

positions = 5 * torch.rand((6, 3), requires_grad=True)
cell = 5 * torch.eye(3, requires_grad=True)
charges = torch.rand((6, 1))
output = calculator(positions, charges, cell)
output.sum().backward()
print(output.sum().item())

positions = 5 * torch.rand((6, 3), requires_grad=True)
cell = 5 * torch.eye(3, requires_grad=True)
charges = torch.rand((6, 1))
output = calculator(positions, charges, cell)
output.sum().backward()
print(output.sum().item())
