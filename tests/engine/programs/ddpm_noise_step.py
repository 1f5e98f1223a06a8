# One DDPM training step, repeated: a random timestep per sample, the closed-form
# noised input sqrt(abar) x0 + sqrt(1 - abar) eps, and an MLP that predicts eps
# from it and the timestep, trained with MSE (the shape of diffusion tutorials).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
steps = 50
betas = torch.linspace(1e-4, 0.02, steps)
alpha_bar = torch.cumprod(1.0 - betas, dim=0)
net = nn.Sequential(nn.Linear(2 + 1, 32), nn.SiLU(), nn.Linear(32, 32), nn.SiLU(), nn.Linear(32, 2))
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
data = torch.randn(64, 2) * 0.5 + 1.0
for it in range(4):
    t = torch.randint(0, steps, (64,))
    noise = torch.randn_like(data)
    a = alpha_bar[t].unsqueeze(1)
    noised = a.sqrt() * data + (1 - a).sqrt() * noise
    predicted = net(torch.cat([noised, (t.float() / steps).unsqueeze(1)], dim=1))
    loss = F.mse_loss(predicted, noise)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
