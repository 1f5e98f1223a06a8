"""A Dirichlet policy whose entropy is computed once per batch and added to two
separately backpropagated losses (actor, then a regulariser): the second backward
reaches the entropy's freed lgamma/digamma nodes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Dirichlet

policy = nn.Linear(3, 4)
opt = torch.optim.SGD(policy.parameters(), lr=0.05)
obs = torch.randn(8, 3)
dist = Dirichlet(F.softplus(policy(obs)) + 0.5)
entropy = dist.entropy().mean()
actions = dist.sample()
actor_loss = -dist.log_prob(actions).mean() - 0.1 * entropy
opt.zero_grad()
actor_loss.backward()
reg_loss = 0.01 * entropy
reg_loss.backward()
opt.step()
