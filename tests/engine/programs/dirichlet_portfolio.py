"""A policy-gradient agent allocating a budget over assets: a Dirichlet policy whose
concentrations come from a network (softplus), REINFORCE with a moving baseline and
an entropy bonus."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Dirichlet

torch.manual_seed(0)
assets = 3
policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, assets))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
baseline = 0.0
for episode in range(4):
    state = torch.randn(5, 4)
    concentration = F.softplus(policy(state)) + 1e-3
    dist = Dirichlet(concentration)
    weights = dist.sample()
    returns = (weights * torch.tensor([0.02, 0.05, -0.01])).sum(-1)
    advantage = returns - baseline
    loss = -(dist.log_prob(weights) * advantage).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    baseline = 0.9 * baseline + 0.1 * returns.mean().item()
print(episode, dist.mean.shape, round(float(concentration.sum()), 2) > 0)
