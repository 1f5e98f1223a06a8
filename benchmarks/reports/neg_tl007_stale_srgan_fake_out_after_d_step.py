# fixture: the fix the reporter proposed and the repository adopted: after optimizerD.step(), fake_img and fake_out are computed again so g_loss walks a fresh D forward
# source: https://github.com/leftthomas/SRGAN/issues/79
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.optim as optim


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.LeakyReLU(0.2))
        self.block2 = nn.Sequential(nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8))
        self.block3 = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(8, 3, kernel_size=3, padding=1))

    def forward(self, x):
        block1 = self.block1(x)
        block2 = self.block2(block1)
        block3 = self.block3(block1 + block2)
        return (torch.tanh(block3) + 1) / 2


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm2d(8),
            nn.LeakyReLU(0.2),
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(8, 1, kernel_size=1),
        )

    def forward(self, x):
        batch_size = x.size(0)
        return torch.sigmoid(self.net(x).view(batch_size))


class GeneratorLoss(nn.Module):
    def __init__(self):
        super(GeneratorLoss, self).__init__()
        self.mse_loss = nn.MSELoss()

    def forward(self, out_labels, out_images, target_images):
        adversarial_loss = torch.mean(1 - out_labels)
        image_loss = self.mse_loss(out_images, target_images)
        tv_loss = torch.pow(out_images[:, :, 1:, :] - out_images[:, :, :-1, :], 2).mean()
        return image_loss + 0.001 * adversarial_loss + 2e-8 * tv_loss


torch.manual_seed(0)
netG = Generator()
netD = Discriminator()
generator_criterion = GeneratorLoss()
optimizerG = optim.Adam(netG.parameters())
optimizerD = optim.Adam(netD.parameters())
train_loader = [(torch.rand(2, 3, 4, 4), torch.rand(2, 3, 8, 8)) for _ in range(2)]

for epoch in range(1, 3):
    for data, target in train_loader:
        real_img = target
        z = data
        fake_img = netG(z)

        netD.zero_grad()
        real_out = netD(real_img).mean()
        fake_out = netD(fake_img).mean()
        d_loss = 1 - real_out + fake_out
        d_loss.backward(retain_graph=True)
        optimizerD.step()

        netG.zero_grad()
        fake_img = netG(z)  # recomputed after D's step
        fake_out = netD(fake_img).mean()
        g_loss = generator_criterion(fake_out, fake_img, real_img)
        g_loss.backward()

        fake_img = netG(z)
        fake_out = netD(fake_img).mean()

        optimizerG.step()
