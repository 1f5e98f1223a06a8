"""A physics-informed network for u_t = u_xx: derivatives of the network's output
with respect to its inputs, with create_graph for the residual's gradient."""
import math

import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(2, 20), nn.Tanh(), nn.Linear(20, 20), nn.Tanh(), nn.Linear(20, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def residual(xt):
    xt = xt.clone().requires_grad_(True)
    u = net(xt)
    du = torch.autograd.grad(u, xt, torch.ones_like(u), create_graph=True)[0]
    u_x, u_t = du[:, :1], du[:, 1:]
    u_xx = torch.autograd.grad(u_x, xt, torch.ones_like(u_x), create_graph=True)[0][:, :1]
    return u_t - u_xx


for it in range(3):
    interior = torch.rand(32, 2)
    x0 = torch.rand(16, 1)
    initial = torch.cat([x0, torch.zeros(16, 1)], dim=1)
    loss = residual(interior).pow(2).mean() + (net(initial) - torch.sin(math.pi * x0)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
