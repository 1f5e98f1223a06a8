# fixture: fix of the diffusion report: the Conv1d that reshapes the signals runs inside the training loop, so each step backwards its own graph
# source: https://github.com/lucidrains/denoising-diffusion-pytorch/issues/109
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyUnet1D(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.inp = nn.Conv1d(channels, 8, 3, padding=1)
        self.out = nn.Conv1d(8, channels, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x) + t.view(-1, 1, 1).float() / 10.0)
        return self.out(h)


class GaussianDiffusion1D(nn.Module):
    def __init__(self, model, timesteps=10):
        super().__init__()
        self.model = model
        self.timesteps = timesteps
        betas = torch.linspace(1e-4, 0.02, timesteps)
        self.register_buffer("alphas_cumprod", torch.cumprod(1.0 - betas, 0))

    def forward(self, x_start):
        t = torch.randint(0, self.timesteps, (x_start.shape[0],))
        noise = torch.randn_like(x_start)
        a = self.alphas_cumprod[t].view(-1, 1, 1)
        x_noisy = a.sqrt() * x_start + (1.0 - a).sqrt() * noise
        return F.mse_loss(self.model(x_noisy, t), noise)


torch.manual_seed(0)
raw = torch.randn(4, 3, 16)  # 4 signals, 3 features, length 16
to_channels = nn.Conv1d(3, 2, kernel_size=1)  # brings the data to the network's 2 channels

model = TinyUnet1D(2)
diffusion = GaussianDiffusion1D(model)
opt = torch.optim.Adam(list(diffusion.parameters()) + list(to_channels.parameters()), lr=1e-3)

for step in range(3):
    training_seq = to_channels(raw)  # recomputed inside the loop: a fresh graph every step
    loss = diffusion(training_seq)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, loss.item())
