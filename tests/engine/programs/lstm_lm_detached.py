"""Truncated BPTT done right: the hidden state is detached between batches."""
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, hidden=None):
        out, hidden = self.rnn(self.emb(tokens), hidden)
        return self.head(out), hidden


def repackage(h):
    return tuple(v.detach() for v in h)


model = LM()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
stream = torch.randint(0, 20, (2, 25))
hidden = None
for i in range(0, 20, 5):
    x, y = stream[:, i:i + 5], stream[:, i + 1:i + 6]
    if hidden is not None:
        hidden = repackage(hidden)
    logits, hidden = model(x, hidden)
    loss = criterion(logits.reshape(-1, 20), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
print(loss.item())
