# fixture: an Ewald/PME-style calculator caches its k-vectors on self while the cell keeps the same values; a second evaluation with a fresh (equal) cell reuses the k-vectors of the first call, whose graph that call's backward freed
# source: https://github.com/lab-cosmo/torch-pme/issues/62
# expect: TL002 57 torch strict
# torch: fails 57 node 15
# strict: fails 57 node 15

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
        self._cell_cache = torch.zeros(3, 3)
        self._kvectors_cache = None

    def _kvectors(self, cell):
        # recompute only when the cell changed since the previous call
        if self._kvectors_cache is None or not torch.allclose(cell, self._cell_cache):
            self._cell_cache = cell.detach().clone()
            self._kvectors_cache = generate_kvectors(cell, self.ns)
        return self._kvectors_cache

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
cell = 5 * torch.eye(3, requires_grad=True)  # a new cell with the same values: the cache is reused
charges = torch.rand((6, 1))
output = calculator(positions, charges, cell)
output.sum().backward()  # fails: the cached k-vectors belong to the first cell's freed graph
print(output.sum().item())
