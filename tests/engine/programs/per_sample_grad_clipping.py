"""DP-SGD style training: per-sample gradients with torch.func (vmap over grad of a
functional_call), each clipped to norm 1, averaged with Gaussian noise and applied by
hand."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))


def sample_loss(params, xi, yi):
    logits = functional_call(model, params, (xi.unsqueeze(0),))
    return F.cross_entropy(logits, yi.unsqueeze(0))


per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))
for step in range(3):
    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = per_sample(params, x, y)
    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))
    factor = (1.0 / (norms + 1e-6)).clamp(max=1.0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = (grads[name] * factor.view(-1, *([1] * (grads[name].dim() - 1)))).mean(0)
            p -= 0.1 * (g + 0.01 * torch.randn_like(g))
print(step, round(F.cross_entropy(model(x), y).item(), 4))
