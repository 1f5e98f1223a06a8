"""Small programs of the shape-chosen fixes (issue 9): a value added to a
total that the analysis knows (or does not know) to hold one element, or
that may be a number; a recurrent state carried across iterations, made by
a torch layer or returned by a project module's `forward`. The choice tests
(`test_fix_choices.py`) lint them; the execution harness
(`test_fix_execution.py`) runs every edit offered on the runnable ones
(`runnable`)."""

from __future__ import annotations

ACCUMULATED = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
model = nn.Linear(3, 1)
{setup}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for step in range(4):
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    {name} = {value}
    opt.zero_grad()
    {backward}.backward()
    opt.step()
    total += {added}
print(total)
"""


def accumulation(setup: str = "", name: str = "q", value: str = "crit(model(x), y)", backward: str = "",
                  added: str = "") -> str:
    return ACCUMULATED.format(setup=setup, name=name, value=value, backward=backward or name, added=added or name)



CARRIED = """\
import torch
import torch.nn as nn
{setup}
head = nn.Linear(4, 1)
{state} = {start}
for step in range(3):
    {unpack} = {call}
    loss = head({out}).sum()
    loss.backward()
"""



FORWARD_STATE = """\
import torch
import torch.nn as nn
{imports}

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{layer}(3, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x, state):
{body}


model = Model()
state = {start}
for step in range(3):
    y, state = model(torch.randn(2, 1, 3), state)
    y.sum().backward()
"""


# (setup, value): `q` holds one element.
SCALAR_CASES = [
    ("crit = nn.SmoothL1Loss()", "crit(model(x), y)"),
    ('crit = nn.MSELoss(reduction="sum")', "crit(model(x), y)"),
    ("", "F.mse_loss(model(x), y)"),
    ("", "(model(x) - y).pow(2).mean()"),
    ("", "torch.sum((model(x) - y) ** 2)"),
    ("crit = nn.L1Loss()", "0.5 * crit(model(x), y) + (model(x) - y).abs().mean()"),
]
# (setup, value, backward): `loss` holds one element per sample.
MANY_CASES = [
    ('crit = nn.MSELoss(reduction="none")', "crit(model(x), y)", "loss.mean()"),
    ("crit = nn.MSELoss(reduce=False)", "crit(model(x), y)", "loss.mean()"),
    ("", 'F.mse_loss(model(x), y, reduction="none")', "loss.sum()"),
    ("", "(model(x) - y).pow(2).sum(0)", "loss.sum()"),
    ("", "(model(x) - y).pow(2)", "loss.mean()"),
    ("crit = nn.MSELoss()", "crit(model(x), y) + model(x)", "loss.sum()"),
]
# (added, edit): what is added may be a number.
NUMBER_CASES = [
    ("q if step % 2 else 0.0", "float(q if step % 2 else 0.0)"),
    ("q or 0", "float(q or 0)"),
]
# (setup, state, start, unpack, call, out, edit)
CARRIED_CASES = [
    ("rnn = nn.GRU(3, 4)", "h", "torch.zeros(1, 1, 4)", "out, h", "rnn(torch.randn(2, 1, 3), h)", "out",
     "h = h.detach()"),
    ("rnn = nn.RNN(3, 4)", "h", "None", "out, h", "rnn(torch.randn(2, 1, 3), h)", "out", "h = h.detach()"),
    ("rnn = nn.LSTM(3, 4)", "state", "None", "out, state", "rnn(torch.randn(2, 1, 3), state)", "out",
     "state = tuple(t.detach() for t in state)"),
    ("cell = nn.GRUCell(3, 4)", "h", "torch.zeros(1, 4)", "h", "cell(torch.randn(1, 3), h)", "h",
     "h = h.detach()"),
    ("cell = nn.LSTMCell(3, 4)", "hc", "None", "hc", "cell(torch.randn(1, 3), hc)", "hc[0]",
     "hc = tuple(t.detach() for t in hc)"),
]
# (layer, forward's body, start, edit or None)
FORWARD_CASES = [
    ("GRU", "        out, h = self.rnn(x, state)\n        return self.head(out), h", "torch.zeros(1, 1, 4)",
     "state = state.detach()"),
    ("LSTM", "        out, (h, c) = self.rnn(x, state)\n        return self.head(out), (h, c)",
     "(torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))", "state = tuple(t.detach() for t in state)"),
    ("LSTM", "        out, hc = self.rnn(x, state)\n        return self.head(out), hc", "None",
     "state = tuple(t.detach() for t in state)"),
    ("GRU", "        out, h = self.rnn(x, state)\n        return self.head(out), h",
     "(torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))", None),
    ("GRU", "        out, h = self.rnn(x, state)\n        return self.head(out), h", "somelib.initial_state()", None),
]


def carried(setup: str, state: str, start: str, unpack: str, call: str, out: str) -> str:
    return CARRIED.format(setup=setup, state=state, start=start, unpack=unpack, call=call, out=out)


def forward_state(layer: str, body: str, start: str) -> str:
    imports = "import somelib\n" if "somelib" in start else ""
    return FORWARD_STATE.format(imports=imports, layer=layer, body=body, start=start)


def runnable() -> dict[str, str]:
    """The programs that run (under PyTorch and the engine) before any fix:
    the ones whose fixes offer edits (the others import no such library, or
    feed a GRU a tuple)."""
    out = {}
    for i, (setup, value) in enumerate(SCALAR_CASES):
        out[f"scalar_{i}"] = accumulation(setup, value=value)
    for i, (setup, value, backward) in enumerate(MANY_CASES):
        out[f"many_{i}"] = accumulation(setup, name="loss", value=value, backward=backward)
    for i, (added, _) in enumerate(NUMBER_CASES):
        out[f"number_{i}"] = accumulation(value="F.mse_loss(model(x), y)", added=added)
    for i, case in enumerate(CARRIED_CASES):
        out[f"carried_{i}"] = carried(*case[:-1])
    for i, (layer, body, start, edit) in enumerate(FORWARD_CASES):
        if edit is not None:
            out[f"forward_{i}"] = forward_state(layer, body, start)
    return out
