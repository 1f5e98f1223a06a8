"""`confirm`'s backend choice and judgment: `auto` falls back to real PyTorch when the
engine lacks an API (and says so), a node created inside a helper called from
the definition line counts as the definition's node, and a failure inside a call
the predicted line makes (a custom Function's own `backward`) counts as a failure
there, on both backends."""

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


PROGRAMS = Path(__file__).parent / "programs"
CUSTOM_TWICE = PROGRAMS / "custom_function_twice.py"  # raises in Square.backward (14), run by line 23
IN_HELPER = textwrap.dedent("""\
    import torch


    def step(loss):
        loss.backward()


    w = torch.randn(3, requires_grad=True)
    y = w.exp()
    step(y.sum())
    step((y * 2).sum())
""")
CAUGHT = IN_HELPER.replace("step((y * 2).sum())", "try:\n    step((y * 2).sum())\nexcept RuntimeError:\n    pass")


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


def test_a_definition_walked_through_to_the_freed_node_is_confirmed() -> None:
    """PPO's advantages (line 18, a subtraction that saves nothing) carry the value
    head's node (line 17), where PyTorch's second backward fails: the failing walk
    reached line 18's freed node first (`reused_lines`), which confirms the finding
    there; without that record the node line alone refutes it."""
    path = PROGRAMS / "ppo_advantage_outside_epochs.py"
    (diagnostic,) = _lint(path).diagnostics
    report = run_program(str(path), "torch")
    assert (report.node_line, 18 in report.reused_lines) == (17, True)
    verdict = judge(diagnostic, report, Semantics.TORCH)
    assert verdict.status == "confirmed" and "freed node of line 18" in verdict.runtime["detail"]
    assert judge(diagnostic, dataclasses.replace(report, reused_lines=()), Semantics.TORCH).status == "refuted"
    assert RunReport.from_dict(report.to_dict()) == report


def _failing_at(diagnostic, line: int):
    """The diagnostic with its failing call moved to `line`."""
    related = tuple(dataclasses.replace(r, range=Range(Position(line, 0), Position(line, 20)))
                    if r.role is Role.FAILS_AT else r for r in diagnostic.related)
    return dataclasses.replace(diagnostic, related=related)


@pytest.mark.parametrize("backend", ["engine", "torch"])
def test_a_failure_inside_the_predicted_call_is_confirmed(backend: str) -> None:
    if backend == "torch":
        pytest.importorskip("torch")
    (diagnostic,) = [d for d in _lint(CUSTOM_TWICE).diagnostics if d.code == "TL002"]
    assert diagnostic.related_of(Role.FAILS_AT).range.start.line == 23
    report = run_program(str(CUSTOM_TWICE), "torch", backend=backend)
    assert (report.error_kind, report.line, report.stack) == ("second-backward", 14, (23, 14))
    verdict = judge(diagnostic, report, Semantics.TORCH)
    assert verdict.status == "confirmed", verdict.runtime
    assert "inside the call at line 23" in verdict.runtime["detail"] and verdict.runtime["stack"] == [23, 14]


def test_a_failure_elsewhere_is_still_refuted() -> None:
    """The stack must pass through the predicted line: the first backward (22), a
    line the run never called through, or a report that lost the outer call refute."""
    (diagnostic,) = [d for d in _lint(CUSTOM_TWICE).diagnostics if d.code == "TL002"]
    report = run_program(str(CUSTOM_TWICE), "torch")
    assert judge(_failing_at(diagnostic, 22), report, Semantics.TORCH).status == "refuted"
    assert judge(_failing_at(diagnostic, 14 + 1), report, Semantics.TORCH).status == "refuted"
    innermost_only = dataclasses.replace(report, stack=(14,))
    assert judge(diagnostic, innermost_only, Semantics.TORCH).status == "refuted"


def test_any_of_several_failing_calls_may_be_the_one() -> None:
    """One hazard walked by the backwards of both arms of an if names each as `fails-at`."""
    (diagnostic,) = [d for d in _lint(CUSTOM_TWICE).diagnostics if d.code == "TL002"]
    report = run_program(str(CUSTOM_TWICE), "torch")
    (fails_at,) = [r for r in diagnostic.related if r.role is Role.FAILS_AT]
    other_arm = dataclasses.replace(fails_at, range=Range(Position(30, 0), Position(30, 20)))
    both = dataclasses.replace(diagnostic, related=(*diagnostic.related, other_arm))
    assert judge(both, report, Semantics.TORCH).status == "confirmed"
    assert judge(_failing_at(both, 22), report, Semantics.TORCH).status == "refuted"


@pytest.mark.parametrize(("backend", "semantics", "kind"), [
    ("engine", "torch", "second-backward"), ("engine", "strict", "tape-consumed"),
    ("torch", "torch", "second-backward"), ("torch", "strict", "tape-consumed"),
])
def test_the_stack_names_the_helper_and_its_caller(tmp_path: Path, backend: str, semantics: str,
                                                    kind: str) -> None:
    """A backward in a helper: the failing line is the helper's, the stack starts at the caller."""
    if backend == "torch":
        pytest.importorskip("torch")
    path = tmp_path / "helper.py"
    path.write_text(IN_HELPER)
    report = run_program(str(path), semantics, backend=backend)
    assert (report.error_kind, report.line, report.stack) == (kind, 5, (11, 5))


def test_a_caught_error_keeps_its_stack(tmp_path: Path) -> None:
    path = tmp_path / "caught.py"
    path.write_text(CAUGHT)
    report = run_program(str(path), "torch")
    assert (report.error_kind, report.caught, report.line, report.stack) == ("second-backward", True, 5, (12, 5))


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
