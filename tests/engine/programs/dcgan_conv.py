"""A tiny DCGAN: ConvTranspose2d/BatchNorm2d generator, Conv2d discriminator."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, nz=8):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(nz, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
            nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),
            nn.ConvTranspose2d(8, 1, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 4, 2, 1, bias=False)
        self.c2 = nn.Conv2d(8, 16, 4, 2, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.out = nn.Conv2d(16, 1, 4, 1, 0, bias=False)

    def forward(self, x):
        x = F.leaky_relu(self.c1(x), 0.2)
        x = F.leaky_relu(self.bn(self.c2(x)), 0.2)
        return self.out(x).view(-1)


netG, netD = Generator(), Discriminator()
optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
loss_fn = nn.BCEWithLogitsLoss()
for it in range(2):
    real = torch.rand(4, 1, 16, 16) * 2 - 1
    fake = netG(torch.randn(4, 8, 1, 1))
    optD.zero_grad()
    errD = loss_fn(netD(real), torch.ones(4)) + loss_fn(netD(fake.detach()), torch.zeros(4))
    errD.backward()
    optD.step()
    optG.zero_grad()
    errG = loss_fn(netD(fake), torch.ones(4))
    errG.backward()
    optG.step()
print(errD.item(), errG.item())
