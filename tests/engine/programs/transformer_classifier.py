"""A sequence classifier: embedding + TransformerEncoder + mean pooling, AdamW with a
cosine schedule."""
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, vocab=30, d=16, classes=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens, pad_mask):
        h = self.encoder(self.emb(tokens), src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1))


model = Classifier()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
tokens = torch.randint(0, 30, (4, 7))
pad = torch.zeros(4, 7, dtype=torch.bool)
pad[:, 5:] = True
labels = torch.tensor([0, 1, 1, 0])
for step in range(3):
    loss = nn.functional.cross_entropy(model(tokens, pad), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
print(loss.item(), sched.get_last_lr())
