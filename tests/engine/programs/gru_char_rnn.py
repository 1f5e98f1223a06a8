"""A character-level GRU cell unrolled by hand, trained with Adagrad."""
import torch
import torch.nn as nn
import torch.nn.functional as F

vocab, hidden_size = 12, 24
emb = nn.Embedding(vocab, 8)
cell = nn.GRUCell(8, hidden_size)
out = nn.Linear(hidden_size, vocab)
params = list(emb.parameters()) + list(cell.parameters()) + list(out.parameters())
opt = torch.optim.Adagrad(params, lr=0.1)
text = torch.randint(0, vocab, (4, 9))
for epoch in range(3):
    h = torch.zeros(4, hidden_size)
    loss = 0.0
    for t in range(8):
        h = cell(emb(text[:, t]), h)
        loss = loss + F.cross_entropy(out(h), text[:, t + 1])
    opt.zero_grad()
    (loss / 8).backward()
    opt.step()
print(loss.item())
