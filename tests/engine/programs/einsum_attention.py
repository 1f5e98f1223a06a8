"""Hand-written multi-head self-attention with einsum, a LayerNorm residual, RMSprop."""
import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, d=12, heads=3):
        super().__init__()
        self.heads, self.dk = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.dk).unbind(2)
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.dk)
        att = att.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 1), float("-inf"))
        out = torch.einsum("bhqk,bkhd->bqhd", att.softmax(-1), v).reshape(b, t, d)
        return self.norm(x + self.proj(out))


model = SelfAttention()
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)
for step in range(3):
    x = torch.randn(2, 5, 12)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
