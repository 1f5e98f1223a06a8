"""Continuous-action actor-critic: Normal policy, separate critic, one combined loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 32), nn.Tanh())
        self.mu = nn.Linear(32, 1)
        self.log_std = nn.Parameter(torch.zeros(1))
        self.value = nn.Linear(32, 1)

    def forward(self, s):
        h = self.body(s)
        return Normal(self.mu(h), self.log_std.exp()), self.value(h)


model = ActorCritic()
opt = torch.optim.RMSprop(model.parameters(), lr=7e-4)
for update in range(3):
    states = torch.randn(6, 3)
    dist, values = model(states)
    actions = dist.sample()
    rewards = -(actions ** 2).detach()
    advantage = rewards - values
    actor_loss = -(dist.log_prob(actions) * advantage.detach()).mean() - 0.01 * dist.entropy().mean()
    critic_loss = F.smooth_l1_loss(values, rewards)
    opt.zero_grad()
    (actor_loss + 0.5 * critic_loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
print(actor_loss.item(), critic_loss.item())
