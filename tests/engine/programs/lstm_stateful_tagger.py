# A batch-first LSTM tagger over a stream cut into chunks: the state carries over
# from chunk to chunk and is detached at each boundary (truncated BPTT, the
# "stateful" pattern of LSTM tutorials), so every backward stays in its chunk.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1)
embed = nn.Embedding(20, 8)
lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True, dropout=0.1)
tagger = nn.Linear(12, 5)
params = list(embed.parameters()) + list(lstm.parameters()) + list(tagger.parameters())
opt = torch.optim.SGD(params, lr=0.1)
stream = torch.randint(0, 20, (3, 24))
tags = torch.randint(0, 5, (3, 24))
state = None
for start in range(0, 24, 6):
    if state is not None:
        state = tuple(s.detach() for s in state)
    out, state = lstm(embed(stream[:, start:start + 6]), state)
    loss = F.cross_entropy(tagger(out).reshape(-1, 5), tags[:, start:start + 6].reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    print(start, round(loss.item(), 4))
