"""Decoding several targets against one encoded source: the encoder's output (memory)
is computed once and reused, and each target's loss is backpropagated on its own,
so the second backward walks the encoder graph the first one freed."""
import torch
import torch.nn as nn

torch.manual_seed(1)
model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=16, dropout=0.0)
head = nn.Linear(8, 3)
opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.01)

src = torch.randn(6, 2, 8)  # (sequence, batch, features)
memory = model.encoder(src)
for target in (torch.randn(4, 2, 8), torch.randn(3, 2, 8)):
    out = model.decoder(target, memory)
    loss = head(out).logsumexp(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
