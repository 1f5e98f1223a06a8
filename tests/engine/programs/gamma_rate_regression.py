"""Gamma regression of waiting times: a network predicts each example's concentration
and rate, trained by maximum likelihood (Gamma.log_prob), with ReduceLROnPlateau."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Gamma

torch.manual_seed(0)
features = torch.randn(32, 3)
waits = torch.rand(32) * 2 + 0.1
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
opt = torch.optim.RMSprop(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
for epoch in range(5):
    raw = net(features)
    dist = Gamma(F.softplus(raw[:, 0]) + 0.1, F.softplus(raw[:, 1]) + 0.1)
    nll = -dist.log_prob(waits).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    sched.step(nll.item())
print(epoch, round(nll.item(), 4), round(dist.mean.mean().item(), 4))
