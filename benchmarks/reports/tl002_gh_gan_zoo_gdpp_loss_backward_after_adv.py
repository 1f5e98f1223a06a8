# fixture: a GAN trainer backwards the generator's adversarial loss, then a helper builds the GDPP diversity loss on the discriminator features of the same fake batch and backwards it too; the first backward freed the shared G/D graph
# source: https://github.com/facebookresearch/pytorch_GAN_zoo/issues/83
# expect: TL002 37 torch strict
# torch: fails 37 node 19
# strict: fails 37 node 19

import torch
import torch.nn as nn
import torch.nn.functional as F


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2))
        self.decision = nn.Linear(8, 1)

    def forward(self, x, getFeature=False):
        phi = self.features(x)
        out = self.decision(phi)
        if getFeature:
            return out, phi
        return out


def GDPPLoss(phiReal, phiFake, backward=True):
    # match the normalized similarity structure of fake and real features
    def kernel(phi):
        phi = F.normalize(phi, p=2, dim=1)
        return phi @ phi.t()

    fakeK = kernel(phiFake)
    realK = kernel(phiReal)
    loss = F.mse_loss(fakeK, realK.detach())

    if backward:
        loss.backward()

    return loss.item()


class BaseGAN:
    def __init__(self, useGDPP=True):
        torch.manual_seed(0)
        self.netG = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
        self.netD = Discriminator()
        self.optimizerG = torch.optim.Adam(self.netG.parameters(), lr=1e-3)
        self.optimizerD = torch.optim.Adam(self.netD.parameters(), lr=1e-3)
        self.criterion = nn.BCEWithLogitsLoss()
        self.useGDPP = useGDPP

    def buildNoiseData(self, n):
        return torch.randn(n, 3)

    def optimizeParameters(self, real):
        n = real.shape[0]
        allLosses = {}

        # A: update the discriminator
        self.optimizerD.zero_grad()
        predRealD = self.netD(real)
        predFakeG = self.netG(self.buildNoiseData(n)).detach()
        predFakeD = self.netD(predFakeG)
        lossD = self.criterion(predRealD, torch.ones(n, 1)) + self.criterion(predFakeD, torch.zeros(n, 1))
        lossD.backward()
        self.optimizerD.step()
        allLosses["lossD"] = lossD.item()

        # B: update the generator
        self.optimizerG.zero_grad()
        self.optimizerD.zero_grad()
        predFakeG = self.netG(self.buildNoiseData(n))
        predFakeD, phiGFake = self.netD(predFakeG, True)
        lossGFake = self.criterion(predFakeD, torch.ones(n, 1))
        allLosses["lossG_fake"] = lossGFake.item()
        lossGFake.backward()  # frees the graph phiGFake belongs to

        if self.useGDPP:
            _, phiDReal = self.netD(real, True)
            allLosses["lossG_GDPP"] = GDPPLoss(phiDReal, phiGFake, backward=True)

        self.optimizerG.step()
        return allLosses


gan = BaseGAN(useGDPP=True)
for step in range(2):
    real = torch.randn(4, 2) + 2.0
    print(step, gan.optimizeParameters(real))
