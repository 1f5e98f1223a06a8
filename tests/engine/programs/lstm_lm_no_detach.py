"""Truncated BPTT without detaching the hidden state: the second batch's backward
reaches the first batch's freed graph."""
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, hidden=None):
        out, hidden = self.rnn(self.emb(tokens), hidden)
        return self.head(out), hidden


model = LM()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
stream = torch.randint(0, 20, (2, 25))
hidden = None
for i in range(0, 20, 5):
    x, y = stream[:, i:i + 5], stream[:, i + 1:i + 6]
    logits, hidden = model(x, hidden)
    loss = criterion(logits.reshape(-1, 20), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
