"""The fix builders (`tapelint.fixes`): they agree with detection on what a
use means, and one that cannot handle a shape never costs the file its
diagnostics."""

from __future__ import annotations

import textwrap

from tapelint.diagnostics import FixKind, Safety
from tapelint.lint import lint_source
from tapelint.settings import Settings


def _lint(code: str):
    return lint_source(textwrap.dedent(code), "t.py", Settings()).diagnostics


EVAL_LOOP = """\
import logging
import torch
import torch.nn as nn
log = logging.getLogger(__name__)
model = nn.Linear(3, 1)
val_loss = 0.0
for step in range(3):
    val_loss += nn.functional.mse_loss(model(torch.randn(4, 3)), torch.zeros(4, 1))
{report}
"""


def test_a_logged_total_is_reporting_for_detection_and_fix_safety_alike():
    """`log.log(logging.INFO, total / 4)` only reports the total: TL003 fires
    for it (an evaluation loop whose metric is only reported), and for the
    same reason `.item()` is safe, exactly as with `print(total / 4)`."""
    for report in ("print(val_loss / 4)", "log.log(logging.INFO, val_loss / 4)", "log.info(val_loss)"):
        diagnostics = _lint(EVAL_LOOP.format(report=report))
        assert [d.code for d in diagnostics] == ["TL003"], report
        first = diagnostics[0].fixes[0]
        assert (first.kind, first.safety) == (FixKind.ITEM, Safety.SAFE), report


SHARED = """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h * 2).sum()
{first}
l2.backward()
"""
FIRST_IN_A_BLOCK = {
    "if": "if x.sum() > 0:\n    l1.backward()",
    "try": "try:\n    l1.backward()\nexcept RuntimeError:\n    pass",
    "case": "match 1:\n    case 1:\n        l1.backward()",
}


def test_combine_with_the_first_backward_in_a_block_and_the_second_outside_it():
    """The two backwards are in different blocks: no mechanical combine (the
    fix is a suggestion), and the diagnostic is there (this used to raise
    IndexError and drop every diagnostic of the file)."""
    for where, first in FIRST_IN_A_BLOCK.items():
        source = SHARED.format(first=first)
        diagnostics = _lint(source)
        assert [d.code for d in diagnostics] == ["TL002"], where
        assert diagnostics[0].range.start.line == source.count("\n"), where
        combine = next(f for f in diagnostics[0].fixes if f.kind is FixKind.COMBINE)
        assert combine.safety is Safety.DISPLAY_ONLY and not combine.edits, where


def test_a_failing_fix_builder_keeps_the_diagnostic_without_that_fix(monkeypatch):
    from tapelint.fixes import remove

    source = "import torch\nx = torch.ones(2, requires_grad=True)\nl = (x * x).sum()\nl.backward()\nl.backward()\n"
    (before,) = _lint(source)
    assert [f.safety for f in before.fixes][:1] == [Safety.UNSAFE] and before.fixes[0].edits

    def broken(*args, **kwargs):
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(remove, "delete_statement", broken)
    (after,) = _lint(source)
    assert (after.code, after.range, after.message) == (before.code, before.range, before.message)
    assert after.fixes[0].kind is FixKind.REMOVE and after.fixes[0].safety is Safety.DISPLAY_ONLY
    assert not after.fixes[0].edits and after.fixes[1:] == before.fixes[1:]
