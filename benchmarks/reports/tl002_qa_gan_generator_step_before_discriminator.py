# fixture: a GAN step that trains the generator first: both losses are computed up front from one D(G(z)) output, loss_g.backward() frees the shared generator/discriminator graph, and loss_d.backward() then fails; the reporter's retain_graph=True only hid that D's loss backpropagates into G
# source: https://whosebug.com/question/5232549/How-does-PyTorch-s-loss-backward-work-when-retain-graph-True-is-specified
# expect: TL002 34 torch strict
# torch: fails 34 node 24
# strict: fails 34 node 27

import torch
import torch.nn as nn

torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
discriminator = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
optim_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
optim_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()

for step in range(3):
    real = torch.randn(4, 2) + 1.0
    z = torch.randn(4, 3)
    ones, zeros = torch.ones(4, 1), torch.zeros(4, 1)

    # computing loss_g and loss_d...
    fake = generator(z)
    pred_fake = discriminator(fake)
    pred_real = discriminator(real)
    loss_g = bce(pred_fake, ones)
    loss_d = bce(pred_real, ones) + bce(pred_fake, zeros)

    optim_g.zero_grad()
    loss_g.backward()
    optim_g.step()

    optim_d.zero_grad()
    loss_d.backward()
    optim_d.step()
    print(step, loss_g.item(), loss_d.item())
