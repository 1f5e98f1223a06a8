"""`confirm`'s backend choice and judgment: `auto` falls back to real PyTorch when the
engine lacks an API (and says so), and a node created inside a helper called from
the definition line counts as the definition's node."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from tapelint.confirm import confirm_file, judge
from tapelint.diagnostics import Position, Range, Role, Semantics
from tapelint.lint import lint_source
from tapelint.settings import Settings
from tapelint_engine.runner import RunReport, run_program

HELPER = textwrap.dedent("""\
    import torch


    def embed(x, w):
        return torch.tanh(x @ w)


    w = torch.randn(3, 3, requires_grad=True)
    x = torch.randn(2, 3)
    h = embed(x, w)
    loss_a = (h * 2).sum()
    loss_b = (h * 3).sum()
    loss_a.backward()
    loss_b.backward()
""")
UNMODELLED = textwrap.dedent("""\
    import torch

    w = torch.randn(3, requires_grad=True)
    feats = torch.special.expit(w.exp())
    for step in range(2):
        loss = (feats * 2).sum()
        loss.backward()
""")


def _lint(path: Path):
    return lint_source(path.read_text(), str(path), Settings(semantics=Semantics.TORCH))


def _at_line(diagnostic, line: int):
    """The diagnostic with its definition moved to `line` (where the helper is called)."""
    related = tuple(dataclasses.replace(r, range=Range(Position(line, 0), Position(line, 20)))
                    if r.role is Role.DEFINITION else r for r in diagnostic.related)
    return dataclasses.replace(diagnostic, related=related)


def test_node_made_in_a_helper_called_from_the_definition_is_confirmed(tmp_path: Path) -> None:
    path = tmp_path / "helper.py"
    path.write_text(HELPER)
    (diagnostic,) = [d for d in _lint(path).diagnostics if d.code == "TL002"]
    report = run_program(str(path), "torch")
    assert (report.node_line, report.node_lines[:2]) == (5, (5, 10))
    verdict = judge(_at_line(diagnostic, 10), report, Semantics.TORCH)
    assert verdict.status == "confirmed" and "helper" in verdict.runtime["detail"]
    assert judge(_at_line(diagnostic, 12), report, Semantics.TORCH).status == "refuted"
    no_stack = dataclasses.replace(report, node_lines=())
    assert judge(_at_line(diagnostic, 10), no_stack, Semantics.TORCH).status == "refuted"


def test_report_round_trips_its_node_stack(tmp_path: Path) -> None:
    path = tmp_path / "helper.py"
    path.write_text(HELPER)
    report = run_program(str(path), "torch")
    assert RunReport.from_dict(report.to_dict()) == report


def test_auto_confirms_on_pytorch_when_the_engine_lacks_an_api(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "unmodelled.py"
    path.write_text(UNMODELLED)
    result = _lint(path)
    assert result.diagnostics
    (engine_only,) = {c.status for _, c in confirm_file(result, Semantics.TORCH, backend="engine")}
    assert engine_only == "unsupported"
    judged = confirm_file(result, Semantics.TORCH, backend="auto")
    assert {c.status for _, c in judged} == {"confirmed"}
    assert {c.runtime["backend"] for _, c in judged} == {"torch"}
    assert all("torch.special" in c.runtime["detail"] for _, c in judged)


def test_auto_keeps_the_engine_when_it_decides(tmp_path: Path) -> None:
    path = tmp_path / "helper.py"
    path.write_text(HELPER)
    judged = confirm_file(_lint(path), Semantics.TORCH, backend="auto")
    assert [(c.status, c.runtime["backend"]) for _, c in judged] == [("confirmed", "engine")]


def test_auto_under_strict_confirms_on_pytorch_with_burns_tape(tmp_path: Path) -> None:
    """An engine-unsupported strict run falls back to the strict tracker over PyTorch."""
    pytest.importorskip("torch")
    path = tmp_path / "unmodelled.py"
    path.write_text(UNMODELLED)
    result = lint_source(UNMODELLED, str(path), Settings(semantics=Semantics.STRICT))
    assert result.diagnostics
    judged = confirm_file(result, Semantics.STRICT, backend="auto")
    assert [(c.status, c.runtime["backend"]) for _, c in judged] == [("confirmed", "torch")] * len(judged)
