# PPO with a shared body, a Categorical policy head and a value head. The
# advantages are computed once, before the epochs, from values that still carry
# the critic's graph (hijkzzz/pymarl2#46: "crashes if mini_epochs > 1"), so the
# second epoch's backward walks the first epoch's freed value graph.
import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(0)
body = nn.Sequential(nn.Linear(4, 16), nn.Tanh())
policy_head, value_head = nn.Linear(16, 3), nn.Linear(16, 1)
params = list(body.parameters()) + list(policy_head.parameters()) + list(value_head.parameters())
opt = torch.optim.Adam(params, lr=3e-4)
states, returns = torch.randn(8, 4), torch.randn(8)
with torch.no_grad():
    old_log_probs = Categorical(logits=policy_head(body(states))).log_prob(torch.zeros(8, dtype=torch.long))
values = value_head(body(states)).squeeze(-1)
advantages = returns - values  # not detached: the critic's graph rides along
for epoch in range(2):
    features = body(states)
    dist = Categorical(logits=policy_head(features))
    ratio = (dist.log_prob(torch.zeros(8, dtype=torch.long)) - old_log_probs).exp()
    clipped = torch.clamp(ratio, 0.8, 1.2)
    actor_loss = -torch.min(ratio * advantages, clipped * advantages).mean()
    critic_loss = (value_head(features).squeeze(-1) - returns).pow(2).mean()
    opt.zero_grad()
    (actor_loss + 0.5 * critic_loss - 0.01 * dist.entropy().mean()).backward()
    opt.step()
    print(epoch, round(actor_loss.item(), 4))
