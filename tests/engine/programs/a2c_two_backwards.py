"""Actor and critic share a trunk; backwarding the two losses separately frees the
trunk's buffers before the critic's backward needs them."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

trunk = nn.Sequential(nn.Linear(4, 32), nn.ReLU())
actor, critic = nn.Linear(32, 2), nn.Linear(32, 1)
params = list(trunk.parameters()) + list(actor.parameters()) + list(critic.parameters())
opt = torch.optim.Adam(params, lr=3e-4)

states = torch.randn(5, 4)
h = trunk(states)
dist = Categorical(logits=actor(h))
actions = dist.sample()
returns = torch.randn(5)
values = critic(h).squeeze(-1)
actor_loss = -(dist.log_prob(actions) * (returns - values.detach())).mean()
critic_loss = F.mse_loss(values, returns)
opt.zero_grad()
actor_loss.backward()
critic_loss.backward()
opt.step()
