# fixture: spiking CNN whose leaky neurons keep their membrane potential on self (init_hidden style); the training loop's forward_pass never resets them, so batch 2 backwards into batch 1's freed graph through the membrane
# source: https://github.com/jeshraghian/snntorch/issues/250
# expect: TL005 66 torch strict
# torch: fails 69 node 22
# strict: fails 69 node 22

import torch
import torch.nn as nn
import torch.nn.functional as F


class Leaky(nn.Module):
    """A leaky integrate-and-fire layer that holds its membrane potential itself."""

    def __init__(self, beta, output=False):
        super().__init__()
        self.beta = beta
        self.output = output
        self.mem = torch.zeros(1)

    def forward(self, x):
        self.mem = self.beta * self.mem + x
        spk = torch.sigmoid(4.0 * (self.mem - 1.0))  # smooth stand-in for the surrogate spike
        if self.output:
            return spk, self.mem
        return spk

    def reset_mem(self):
        self.mem = torch.zeros(1)


def reset(net):
    for m in net.modules():
        if isinstance(m, Leaky):
            m.reset_mem()


class SCNN(nn.Module):
    def __init__(self, num_steps):
        super().__init__()
        self.num_steps = num_steps
        self.net = nn.Sequential(
            nn.Conv2d(1, 4, 3), Leaky(beta=0.9),
            nn.Flatten(), nn.Linear(64, 2), Leaky(beta=0.9, output=True),
        )

    def forward(self, x):
        return self.net(x)


def forward_pass(net, num_steps, data):
    mem_rec = []
    spk_rec = []
    for step in range(num_steps):  # no reset(net) before the time steps
        spk_out, mem_out = net(data)
        spk_rec.append(spk_out)
        mem_rec.append(mem_out)
    return torch.stack(spk_rec), torch.stack(mem_rec)


torch.manual_seed(0)
net = SCNN(num_steps=3)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
train_loader = [(torch.rand(2, 1, 6, 6), torch.tensor([0, 1])) for _ in range(3)]
for data, targets in train_loader:
    spk_rec, mem_rec = forward_pass(net, net.num_steps, data)
    loss = F.cross_entropy(spk_rec.sum(0), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(loss.item())
