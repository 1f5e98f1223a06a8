# fixture: a GAN that updates the generator several times per discriminator step; the discriminator step scores fake_batch left over from the generator's last inner iteration, whose graph g_loss.backward() already freed, so d_loss.backward() fails although it runs only once
# source: https://pytroubles.com/ru/posts/id2658-gan-v-pytorch-ispravljaem-oshibku-backward-cherez-detach
# expect: TL002 45 torch strict
# torch: fails 45 node 30
# strict: fails 45 node 30

import torch
import torch.nn as nn

latent_dim, data_dim = 3, 6
g_update_factor, d_update_factor = 2, 1
total_epochs = 2

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(latent_dim, 8), nn.ReLU(), nn.Linear(8, data_dim), nn.Tanh())
netD = nn.Sequential(nn.Linear(data_dim, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
bce_loss = nn.BCELoss()
data_stream = [(torch.rand(4, 2, 3), torch.zeros(4)) for _ in range(2)]

for epoch in range(total_epochs):
    for batch_id, (real_batch, _) in enumerate(data_stream):
        real_batch = real_batch.view(-1, data_dim)
        bsz = real_batch.shape[0]

        # generator updates (n times)
        for _ in range(g_update_factor):
            z = torch.randn(bsz, latent_dim)
            fake_batch = netG(z)
            gen_scores = netD(fake_batch).view(-1)
            g_loss = bce_loss(gen_scores, torch.ones_like(gen_scores))
            g_loss.backward()
            optG.step()
            netG.zero_grad()

        # discriminator updates (m times), on the last fake_batch
        for _ in range(d_update_factor):
            netD.zero_grad()
            real_scores = netD(real_batch).view(-1)
            fake_scores = netD(fake_batch).view(-1)
            d_loss = bce_loss(real_scores, torch.ones_like(real_scores)) + bce_loss(
                fake_scores, torch.zeros_like(fake_scores)
            )
            d_loss.backward()
            optD.step()
        print(epoch, batch_id, g_loss.item(), d_loss.item())
