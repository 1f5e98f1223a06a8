"""A module's train/eval mode as a path fact (`interp/grad_mode.py`): what
`torch.set_grad_enabled(model.training)` switches to, as PyTorch does."""

from __future__ import annotations

import textwrap

import pytest

from tapelint.lint import lint_source
from tapelint.settings import Settings

# An evaluation loop summing losses computed under set_grad_enabled(model.training);
# {switch} puts the model in some mode first. With gradients on, TL003 at `total += loss`.
PROGRAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(3, 1)
{switch}
total = 0.0
for step in range(3):
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    with torch.set_grad_enabled(model.training):
        loss = F.mse_loss(model(x), y)
    total += loss
print(float(total))
"""


def findings(switch: str) -> list[tuple[str, int]]:
    source = PROGRAM.format(switch=switch)
    return [(d.code, d.range.start.line) for d in lint_source(source, "eval_loop.py", Settings()).diagnostics]


@pytest.mark.parametrize("switch", ["model.eval()", "model.train(False)", "model.train()\nmodel.eval()"])
def test_eval_mode_turns_gradients_off(switch):
    assert findings(switch) == []


@pytest.mark.parametrize("switch", [
    "model.train()",
    "model.train(True)",
    "model.eval()\nmodel.train()",
    "model.eval()\nmodel.train(torch.rand(1).item() > 0.5)",  # a flag not known: the fact is gone
    "model.eval()\nmodel = nn.Linear(3, 1)",  # a new model: nothing known about its mode
    "pass",  # no switch at all: gradients stay on, as before
])
def test_training_or_unknown_mode_keeps_gradients_on(switch):
    assert findings(switch) == [("TL003", 12 + switch.count("\n"))]


def test_the_fact_decides_a_test_on_the_mode_too():
    """After `model.eval()`, `if model.training:` is not taken (its backward never runs)."""
    source = textwrap.dedent("""\
        import torch
        import torch.nn as nn

        model = nn.Linear(3, 1)
        model.eval()
        out = model(torch.randn(2, 3)).sum()
        if model.training:
            out.backward()
        out.backward()
    """)
    assert [d.code for d in lint_source(source, "mode_branch.py", Settings()).diagnostics] == []
