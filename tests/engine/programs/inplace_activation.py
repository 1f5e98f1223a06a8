"""An in-place update of an activation that sigmoid saved for its backward."""
import torch
import torch.nn as nn

layer = nn.Linear(4, 4)
x = torch.randn(2, 4)
h = torch.sigmoid(layer(x))
h *= 2.0
loss = h.sum()
loss.backward()
