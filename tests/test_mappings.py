"""Mappings by literal key (`analysis/mappings.py`), keyword arguments spread
from them, method values, in-place adds and type tests: checked on what the
rules report for small programs, each both ways (the line that makes the
difference is the only change)."""

from __future__ import annotations

import textwrap

import pytest

from tapelint.lint import lint_source
from tapelint.settings import Settings

LOOP = """
    import torch
    import torch.nn.functional as F
    from collections import OrderedDict

    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = []
    total = 0.0
    for step in range(3):
        x, y = torch.randn(4, 3), torch.randn(4, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        {body}
    print(kept, total)
    """


def codes(code: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(code), "t.py", Settings())
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


def in_loop(*lines: str) -> list[tuple[str, int]]:
    body = "\n        ".join(lines)
    return codes(LOOP.format(body=body))


LAST = 15 + 1  # the line of the loop body's first statement


@pytest.mark.parametrize("lines,found", [
    # a slot replaced by its detached value: the dict holds no graph
    (('out = {"loss": loss, "n": 4}', 'out["loss"] = out["loss"].detach()', "kept.append(out)"), []),
    (('out = {"loss": loss, "n": 4}', "kept.append(out)"), [("TL003", LAST + 1)]),
    # another key of the dict that holds the loss is read
    (('out = dict(loss=loss, n=4)', 'total += out["n"]'), []),
    (('out = dict(loss=loss, n=4)', 'total += out["loss"]'), [("TL003", LAST + 1)]),
    (('out = OrderedDict(loss=loss)', 'total += out.get("n", 0)'), []),
    (('out = OrderedDict(loss=loss)', 'total += out.get("loss", 0)'), [("TL003", LAST + 1)]),
    # a key that is no literal may be any: it reads the loss too
    (('out = {"loss": loss}', 'key = "lo" + "ss"', "total += out[key]"), [("TL003", LAST + 2)]),
    # a copy keeps the slots; a `**` spread into a literal too
    (('out = dict({"loss": loss.detach(), "n": 4})', 'kept.append(out["loss"])'), []),
    (('out = {**{"loss": loss}, "n": 4}', 'kept.append(out["loss"])'), [("TL003", LAST + 1)]),
    # `clear()` empties every slot
    (('out = {"loss": loss}', "out.clear()", "kept.append(out)"), []),
    # `del d[k]` and `d.pop(k)` take that key's value out; another key's stays
    (('out = {"loss": loss, "n": 4}', 'del out["loss"]', "kept.append(out)"), []),
    (('out = {"loss": loss, "n": 4}', 'del out["n"]', "kept.append(out)"), [("TL003", LAST + 2)]),
    (('out = {"loss": loss, "n": 4}', 'total += out.pop("loss").item()', "kept.append(out)"), []),
    (('out = {"loss": loss, "n": 4}', 'total += out.pop("n")', "kept.append(out)"), [("TL003", LAST + 2)]),
])
def test_a_mapping_holds_each_literal_key_apart(lines, found):
    assert in_loop(*lines) == found


def test_iterating_a_mapping_yields_keys_its_values_are_read_by_key():
    """`for name in losses` binds keys, so the added value is named as written."""
    found = lint_source(textwrap.dedent(LOOP.format(body="for name in {'l': loss}:\n            total += {'l': loss}[name]")),
                        "t.py", Settings()).diagnostics
    assert [d.code for d in found] == ["TL003"]
    assert "`{'l': loss}[name]`" not in found[0].message and "`name`" not in found[0].message.split("accumulates")[1]


@pytest.mark.parametrize("added,found", [("loss", [("TL003", LAST)]), ("loss.detach()", []), ("loss.item()", [])])
def test_an_in_place_add_accumulates(added, found):
    assert codes(LOOP.format(body=f"acc.add_({added})").replace("total = 0.0", "total = 0.0\n    acc = torch.zeros(())")
                 ) == [(c, line + 1) for c, line in found]


def test_an_in_place_add_changes_every_alias_of_the_tensor():
    """The dict's tensor is what `add_` changed, though it was looked up by a call."""
    program = LOOP.replace("total = 0.0", "total = 0.0\n    stats = {{'loss': torch.zeros(())}}")
    assert codes(program.format(body="stats.get('loss').add_(loss)")) == [("TL003", LAST + 1)]


SEQUENTIAL = """
    import torch
    import torch.nn as nn

    class Leaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.mem = None

        def forward(self, x):
            self.mem = x if self.mem is None else 0.9 * self.mem + x
            return torch.sigmoid(self.mem)

        def reset(self):
            self.mem = None

    class Other(nn.Module):
        def reset(self):
            pass

    net = nn.Sequential(nn.Linear(3, 3), Leaky(), nn.Linear(3, 1), Leaky())
    for batch in range(3):
        {reset}
        out = 0
        for t in range(2):
            out = out + net(torch.randn(2, 3))
        out.sum().backward()
    """


@pytest.mark.parametrize("reset,found", [
    ("pass", [("TL005", 26)]),
    ("for m in net.modules():\n            if isinstance(m, Leaky):\n                m.reset()", []),
    ("for m in net.children():\n            if not isinstance(m, Leaky):\n                continue\n"
     "            m.reset()", []),
    # a test of another class resets nothing
    ("for m in net.modules():\n            if isinstance(m, Other):\n                m.reset()", [("TL005", 28)]),
    # a tuple of classes: one of them is the neuron's
    ("for m in net.modules():\n            if isinstance(m, (Other, Leaky)):\n                m.reset()", []),
    ("for m in net.modules():\n            if isinstance(m, (Other, Other)):\n                m.reset()",
     [("TL005", 28)]),
])
def test_stateful_modules_in_a_sequential_are_reset_one_by_one(reset, found):
    assert codes(SEQUENTIAL.format(reset=reset)) == found


CALLBACKS = """
    import torch

    class Tracker:
        def __init__(self):
            self.total = 0.0

        def on_step(self, trainer, loss=None, **kwargs):
            self.total += loss

    class Trainer:
        def __init__(self, callbacks):
            self.callbacks = list(callbacks)

        def notify(self, event, **kwargs):
            for cb in self.callbacks:
                getattr(cb, event)(self, **kwargs)

    w = torch.ones(2, requires_grad=True)
    trainer = Trainer([Tracker()])
    for step in range(3):
        loss = (w * step).sum()
        loss.backward()
        trainer.notify({event}, **{{"loss": {passed}}})
    """


@pytest.mark.parametrize("event,passed,found", [
    ('"on_step"', "loss", [("TL003", 9)]),
    ('"on_step"', "loss.item()", []),
    ('"on_other"', "loss", []),  # no such method: nothing runs
])
def test_a_method_named_by_a_literal_argument_runs_with_the_spread_keywords(event, passed, found):
    assert codes(CALLBACKS.format(event=event, passed=passed)) == found
