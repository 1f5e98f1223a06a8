# fixture: the fix merged into the tutorial after the report: G steps first on its own loss, then D runs again on G_paintings.detach() for D's loss and step
# source: https://github.com/pytorch/pytorch/issues/39141
# torch: ok
# strict: ok

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
BATCH_SIZE = 4
LR_G = 0.0001
LR_D = 0.0001
N_IDEAS = 5
ART_COMPONENTS = 15
PAINT_POINTS = np.vstack([np.linspace(-1, 1, ART_COMPONENTS) for _ in range(BATCH_SIZE)])


def artist_works():  # the real target: a noisy sine curve per row
    r = 0.02 * np.random.randn(1, ART_COMPONENTS)
    paintings = np.sin(PAINT_POINTS * np.pi) + r
    return torch.from_numpy(paintings).float()


G = nn.Sequential(nn.Linear(N_IDEAS, 16), nn.ReLU(), nn.Linear(16, ART_COMPONENTS))
D = nn.Sequential(nn.Linear(ART_COMPONENTS, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=LR_D)
opt_G = torch.optim.Adam(G.parameters(), lr=LR_G)

for step in range(3):
    artist_paintings = artist_works()
    G_ideas = torch.randn(BATCH_SIZE, N_IDEAS, requires_grad=True)
    G_paintings = G(G_ideas)
    prob_artist1 = D(G_paintings)
    G_loss = torch.mean(torch.log(1.0 - prob_artist1))
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()

    prob_artist0 = D(artist_paintings)
    prob_artist1 = D(G_paintings.detach())  # D runs again, on a detached copy
    D_loss = -torch.mean(torch.log(prob_artist0) + torch.log(1.0 - prob_artist1))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)  # kept from the tutorial; nothing walks it again
    opt_D.step()
