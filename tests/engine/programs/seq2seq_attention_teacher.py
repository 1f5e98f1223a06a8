# A GRU encoder and a GRUCell decoder with dot-product attention over the
# encoder's outputs; each step feeds the gold token or the model's own guess
# (teacher forcing drawn per step), as seq2seq tutorials train translation.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2)
src_embed, tgt_embed = nn.Embedding(12, 8), nn.Embedding(10, 8)
encoder = nn.GRU(8, 16, batch_first=True)
decoder = nn.GRUCell(8 + 16, 16)
readout = nn.Linear(32, 10)
modules = [src_embed, tgt_embed, encoder, decoder, readout]
opt = torch.optim.Adam([p for m in modules for p in m.parameters()], lr=1e-3)
src, tgt = torch.randint(0, 12, (4, 7)), torch.randint(0, 10, (4, 5))
for step in range(3):
    memory, h = encoder(src_embed(src))
    h, token, loss = h[0], torch.zeros(4, dtype=torch.long), 0.0
    context = memory.mean(1)
    for t in range(tgt.size(1)):
        h = decoder(torch.cat([tgt_embed(token), context], -1), h)
        weights = F.softmax(torch.bmm(memory, h.unsqueeze(2)).squeeze(2), dim=1)
        context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
        logits = readout(torch.cat([h, context], -1))
        loss = loss + F.cross_entropy(logits, tgt[:, t])
        token = tgt[:, t] if torch.rand(1).item() < 0.5 else logits.argmax(-1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item() / tgt.size(1), 4))
