"""A bounded continuous action from a Beta policy and a binary gate from a Bernoulli
one; softplus keeps the concentrations positive."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Bernoulli, Beta

net = nn.Linear(3, 3)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for step in range(3):
    s = torch.randn(5, 3)
    out = net(s)
    a, b = F.softplus(out[:, 0]) + 1.0, F.softplus(out[:, 1]) + 1.0
    beta, gate = Beta(a, b), Bernoulli(logits=out[:, 2])
    action, g = beta.sample(), gate.sample()
    reward = (action - 0.3).abs() * g
    loss = -((beta.log_prob(action) + gate.log_prob(g)) * reward).mean() - 0.01 * beta.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
