"""The same GAN with the discriminator fed `fake.detach()`."""
import torch
import torch.nn as nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
criterion = nn.BCELoss()

for step in range(4):
    real = torch.randn(8, 2) * 0.5 + 1.0
    fake = G(torch.randn(8, 4))
    opt_d.zero_grad()
    d_loss = criterion(D(real), torch.ones(8, 1)) + criterion(D(fake.detach()), torch.zeros(8, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = criterion(D(fake), torch.ones(8, 1))
    g_loss.backward()
    opt_g.step()
print("done", g_loss.item())
