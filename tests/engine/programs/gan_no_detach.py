"""GAN on 2-D points: the discriminator step backwards through the generator's graph
(fake is not detached), so the generator step walks freed buffers."""
import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for step in range(3):
    real = torch.randn(8, 2) * 0.5 + 1.0
    fake = G(torch.randn(8, 4))
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake), torch.zeros(8, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(8, 1))
    g_loss.backward()
    opt_g.step()
    print(step, d_loss.item(), g_loss.item())
