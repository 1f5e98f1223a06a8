"""A VAE with a diagonal Gaussian posterior: rsample, kl_divergence against N(0, I),
and a Bernoulli decoder likelihood."""
import torch
import torch.nn as nn
from torch.distributions import Bernoulli, Normal, kl_divergence


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(10, 8)
        self.dec = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 10))

    def forward(self, x):
        mu, log_var = self.enc(x).chunk(2, dim=-1)
        q = Normal(mu, torch.exp(0.5 * log_var))
        z = q.rsample()
        return Bernoulli(logits=self.dec(z)), q


vae = VAE()
opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
prior = Normal(torch.zeros(4), torch.ones(4))
for step in range(3):
    x = (torch.rand(6, 10) > 0.5).float()
    px, q = vae(x)
    elbo = px.log_prob(x).sum(-1) - kl_divergence(q, prior).sum(-1)
    loss = -elbo.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
