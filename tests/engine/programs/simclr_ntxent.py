# SimCLR's NT-Xent loss: two noisy views of a batch through one encoder and a
# projection head, cosine similarities over all 2N views at a temperature, each
# view's own similarity masked out, its other view the target class.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(4)
encoder = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 16))
head = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8))
opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=0.05, momentum=0.9)
images = torch.randn(6, 10)
n = images.size(0)
for it in range(3):
    views = torch.cat([images + 0.1 * torch.randn_like(images), images + 0.1 * torch.randn_like(images)])
    z = F.normalize(head(encoder(views)), dim=1)
    sim = z @ z.t() / 0.5
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    loss = F.cross_entropy(sim, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(it, round(loss.item(), 4))
