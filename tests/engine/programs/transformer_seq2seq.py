"""A tiny nn.Transformer learning to copy a sequence: embeddings, positional
encodings, the causal target mask, teacher forcing, Adam and gradient clipping."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
vocab, d_model, length = 7, 16, 5


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.core = nn.Transformer(d_model, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                   dim_feedforward=32, dropout=0.1, batch_first=True)
        self.out = nn.Linear(d_model, vocab)
        position = torch.arange(length).unsqueeze(1)
        scale = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(length, d_model)
        pe[:, 0::2] = torch.sin(position * scale)
        pe[:, 1::2] = torch.cos(position * scale)
        self.register_buffer("pe", pe)

    def forward(self, src, tgt):
        s = self.embed(src) * math.sqrt(d_model) + self.pe[: src.size(1)]
        t = self.embed(tgt) * math.sqrt(d_model) + self.pe[: tgt.size(1)]
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.out(self.core(s, t, tgt_mask=mask))


model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
for step in range(3):
    src = torch.randint(1, vocab, (4, length))
    tgt_in = torch.cat([torch.zeros(4, 1, dtype=torch.long), src[:, :-1]], dim=1)
    logits = model(src, tgt_in)
    loss = loss_fn(logits.reshape(-1, vocab), src.reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
print(step, round(loss.item(), 4))
