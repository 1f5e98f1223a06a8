"""MAML on sine regression written with torch.func: the inner step is
torch.func.grad of a functional_call, the outer loss backpropagates through it into
the meta-parameters (second order), Adam on the meta-parameters."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 20), nn.Tanh(), nn.Linear(20, 1))
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def task_loss(params, x, y):
    return F.mse_loss(functional_call(net, params, (x,)), y)


for it in range(3):
    meta_opt.zero_grad()
    outer = 0.0
    for task in range(2):
        amp, phase = 1.0 + task, 0.5 * task
        xs, xq = torch.rand(5, 1) * 2 * math.pi, torch.rand(5, 1) * 2 * math.pi
        ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
        params = dict(net.named_parameters())
        g = grad(task_loss)(params, xs, ys)
        adapted = {k: params[k] - 0.01 * g[k] for k in params}
        outer = outer + task_loss(adapted, xq, yq)
    outer.backward()
    meta_opt.step()
print(it, round(outer.item(), 4))
