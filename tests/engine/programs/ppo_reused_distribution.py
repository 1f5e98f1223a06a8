"""PPO-style epochs over one batch: the old policy's distribution is built once with a
graph, and its cached log-probs are reused in every epoch's loss."""
import torch
import torch.nn as nn
from torch.distributions import Categorical

policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
states = torch.randn(10, 4)
old_dist = Categorical(logits=policy(states))
actions = old_dist.sample()
old_log_probs = old_dist.log_prob(actions)
advantages = torch.randn(10)

for epoch in range(3):
    new_log_probs = Categorical(logits=policy(states)).log_prob(actions)
    ratio = torch.exp(new_log_probs - old_log_probs)
    clipped = torch.clamp(ratio, 0.8, 1.2)
    loss = -torch.min(ratio * advantages, clipped * advantages).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
