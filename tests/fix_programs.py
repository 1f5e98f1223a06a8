"""Small programs the fix tests share: a GAN step (its generator's and its
discriminator's halves in either order) and a value that is a backward's
only way to its parameter."""

GAN = """\
import torch
import torch.nn as nn
G = nn.Linear(2, 2)
D = nn.Linear(2, 1)
opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
bce = nn.BCEWithLogitsLoss()
for step in range(3):
    fake = G(torch.randn(4, 2))
{first}
{second}
"""
G_STEP = """\
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(4, 1))
    g_loss.backward()
    opt_g.step()"""
D_STEP = """\
    opt_d.zero_grad()
    d_loss = bce(D(fake), torch.zeros(4, 1)) + bce(D(torch.randn(4, 2)), torch.ones(4, 1))
    d_loss.backward()
    opt_d.step()"""


ONLY_PATH = """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = w.exp()
for step in range(3):
    loss = (feats * 2).sum()
    loss.backward()
"""
