# fixture: SinGAN train_single_scale: the last fake of the D loop is reused by every iteration of the G loop, errG.backward(retain_graph=True) keeps netG's graph and optimizerG.step() changes the weights it saved, so the second G step fails
# source: https://github.com/tamarott/SinGAN/issues/148
# expect: TL007 70 torch strict
# torch: inplace 70
# strict: fails 70 node 39

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.optim as optim


class ConvBlock(nn.Sequential):
    def __init__(self, in_channel, out_channel, ker_size, padd, stride):
        super(ConvBlock, self).__init__()
        self.add_module('conv', nn.Conv2d(in_channel, out_channel, kernel_size=ker_size, stride=stride, padding=padd))
        self.add_module('norm', nn.BatchNorm2d(out_channel))
        self.add_module('LeakyRelu', nn.LeakyReLU(0.2))


class WDiscriminator(nn.Module):
    def __init__(self, opt):
        super(WDiscriminator, self).__init__()
        self.head = ConvBlock(opt.nc_im, opt.nfc, opt.ker_size, opt.padd_size, 1)
        self.tail = nn.Conv2d(opt.nfc, 1, kernel_size=opt.ker_size, stride=1, padding=opt.padd_size)

    def forward(self, x):
        return self.tail(self.head(x))


class GeneratorConcatSkip2CleanAdd(nn.Module):
    def __init__(self, opt):
        super(GeneratorConcatSkip2CleanAdd, self).__init__()
        self.head = ConvBlock(opt.nc_im, opt.nfc, opt.ker_size, opt.padd_size, 1)
        self.tail = nn.Sequential(nn.Conv2d(opt.nfc, opt.nc_im, kernel_size=opt.ker_size, stride=1, padding=opt.padd_size), nn.Tanh())

    def forward(self, x, y):
        return self.tail(self.head(x)) + y


def train_single_scale(netD, netG, real, opt):
    alpha = opt.alpha
    z_opt = torch.randn(1, opt.nc_im, opt.nzx, opt.nzy)
    optimizerD = optim.Adam(netD.parameters(), lr=opt.lr_d, betas=(opt.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt.lr_g, betas=(opt.beta1, 0.999))
    for epoch in range(opt.niter):
        noise_ = torch.randn(1, opt.nc_im, opt.nzx, opt.nzy)

        # (1) update D
        for j in range(opt.Dsteps):
            netD.zero_grad()
            output = netD(real)
            errD_real = -output.mean()
            errD_real.backward(retain_graph=True)
            prev = torch.zeros_like(real)
            z_prev = torch.zeros_like(real)
            noise = opt.noise_amp * noise_ + prev
            fake = netG(noise.detach(), prev)
            output = netD(fake.detach())
            errD_fake = output.mean()
            errD_fake.backward(retain_graph=True)
            optimizerD.step()

        # (2) update G
        for j in range(opt.Gsteps):
            netG.zero_grad()
            output = netD(fake)  # the fake made in the D loop, by netG's weights before this loop's steps
            errG = -output.mean()
            errG.backward(retain_graph=True)
            if alpha != 0:
                loss = nn.MSELoss()
                Z_opt = opt.noise_amp * z_opt + z_prev
                rec_loss = alpha * loss(netG(Z_opt.detach(), z_prev), real)
                rec_loss.backward(retain_graph=True)
                rec_loss = rec_loss.detach()
            optimizerG.step()
    return z_opt, netG


torch.manual_seed(0)
opt = SimpleNamespace(nc_im=3, nfc=4, ker_size=3, padd_size=1, nzx=6, nzy=6, alpha=10, noise_amp=0.1,
                      lr_d=5e-4, lr_g=5e-4, beta1=0.5, niter=2, Dsteps=3, Gsteps=3)
real = torch.rand(1, 3, 6, 6) * 2 - 1
train_single_scale(WDiscriminator(opt), GeneratorConcatSkip2CleanAdd(opt), real, opt)
