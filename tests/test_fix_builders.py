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
