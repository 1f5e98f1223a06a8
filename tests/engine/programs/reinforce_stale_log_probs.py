"""REINFORCE whose log-prob buffer is never cleared: the second episode's loss walks the
first episode's (already freed) graph."""
import torch
import torch.nn as nn
from torch.distributions import Categorical

policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(policy.parameters(), lr=1e-2)
saved_log_probs = []

for episode in range(3):
    rewards = []
    for t in range(4):
        probs = torch.softmax(policy(torch.randn(1, 4)), dim=-1)
        m = Categorical(probs)
        action = m.sample()
        saved_log_probs.append(m.log_prob(action))
        rewards.append(float(action.item()))
    returns = torch.tensor(rewards + [0.0] * (len(saved_log_probs) - len(rewards)))
    policy_loss = torch.cat([-lp * r for lp, r in zip(saved_log_probs, returns)]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
