"""An LSTM over variable-length sequences with pack_padded_sequence and
pad_packed_sequence."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

lstm = nn.LSTM(3, 5, batch_first=True)
x = torch.randn(3, 4, 3)
lengths = torch.tensor([4, 2, 1])
packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)
out, _ = lstm(packed)
out, _ = pad_packed_sequence(out, batch_first=True)
out.sum().backward()
