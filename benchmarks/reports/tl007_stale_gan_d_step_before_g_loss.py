# fixture: the sin(x) tutorial GAN: D and G losses both built from one D(G_paintings) forward, D_loss backwarded with retain_graph=True and opt_D stepped, then G_loss backwarded through D's weights the step had just changed
# source: https://github.com/pytorch/pytorch/issues/39141
# expect: TL007 44 torch strict
# torch: inplace 44
# strict: fails 44 node 39

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
    G_ideas = torch.randn(BATCH_SIZE, N_IDEAS)
    G_paintings = G(G_ideas)
    prob_artist0 = D(artist_paintings)
    prob_artist1 = D(G_paintings)
    D_loss = -torch.mean(torch.log(prob_artist0) + torch.log(1.0 - prob_artist1))
    G_loss = torch.mean(torch.log(1.0 - prob_artist1))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)  # keeps the graph for G_loss below
    opt_D.step()  # changes D's weights in place
    opt_G.zero_grad()
    G_loss.backward()  # walks D(G_paintings), which saved D's old weights
    opt_G.step()
