"""`tapelint confirm`: prove each diagnostic by running the program.

The program runs once per file on the engine (or real PyTorch) in a sandboxed
subprocess; its structured outcome is matched against each diagnostic's
positions, as `docs/rules.md` demands: a reuse finding is `confirmed` only if the
run fails at the diagnostic's `fails-at` call on the node from its
`definition` (a failure inside a call the `fails-at` line makes, such as a
custom Function's own `backward`, counts: the run's `stack` passes through
it); TL003 only if the graph kept alive grows with the iterations.
The engine is imported lazily: the linter itself never needs numpy.
`--backend auto` runs the engine first and, when it reports an API it does not
model and PyTorch is importable, the same program on real PyTorch (under
strict semantics with burn's tape tracked over it); `runtime.backend` says
which one decided.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from typing import Any, Optional

from tapelint.diagnostics import Diagnostic, FileResult, Role, Semantics

REUSE_ERRORS = ("second-backward", "tape-consumed", "inplace")
BACKENDS = ("auto", "engine", "torch")


@dataclass(frozen=True)
class Confirmation:
    status: str  # confirmed | refuted | not-reached | unsupported | timeout
    semantics: str
    runtime: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "semantics": self.semantics, "runtime": self.runtime}


def confirm_file(
    result: FileResult,
    semantics: Semantics,
    *,
    timeout: float = 30.0,
    backend: str = "auto",
) -> list[tuple[Diagnostic, Confirmation]]:
    """Run the file of `result` once (twice under `auto` when the engine lacks an API)
    and judge each of its diagnostics."""
    from tapelint_engine.runner import run_program

    diagnostics = [d for d in result.diagnostics if d.code != "TL900"]
    if not diagnostics:
        return []
    watch = tuple(sorted({d.range.start.line for d in diagnostics if d.code == "TL003"}))
    reach = tuple(sorted({_predicted_line(d) for d in diagnostics}))

    def run(on: str) -> Any:
        return run_program(result.path, semantics.value, timeout=timeout, watch_lines=watch, backend=on,
                           reach_lines=reach)

    report = run("engine" if backend == "auto" else backend)
    if backend == "auto" and report.status == "unsupported" and importlib.util.find_spec("torch") is not None:
        fallback = run("torch")
        report = replace(fallback, detail=f"{fallback.detail + '; ' if fallback.detail else ''}"
                                          f"engine: {report.error or report.detail}")
    return [(d, judge(d, report, semantics)) for d in diagnostics]


def _predicted_line(diagnostic: Diagnostic) -> int:
    """The line whose execution the diagnostic is about: its failing call, or its own line."""
    fails_at = diagnostic.related_of(Role.FAILS_AT)
    return (fails_at or diagnostic).range.start.line


def judge(diagnostic: Diagnostic, report: Any, semantics: Semantics) -> Confirmation:
    """The verdict on one diagnostic, given the run's `RunReport`."""
    runtime = {
        "error": report.error,
        "line": report.line,
        "stack": list(report.stack),
        "node_id": report.node_id,
        "node_line": report.node_line,
        "detail": report.detail,
        "backend": getattr(report, "backend", "engine"),
    }

    def verdict(status: str, detail: Optional[str] = None) -> Confirmation:
        if detail:
            runtime["detail"] = detail
        return Confirmation(status, semantics.value, runtime)

    if report.status == "timeout":
        return verdict("timeout")
    if report.status in ("unsupported", "crash"):
        return verdict("unsupported", report.error or report.detail)
    line = _predicted_line(diagnostic)
    if line in report.reach_lines and line not in report.reached and line not in report.stack:
        # Never executed (the program failed earlier, or took another path):
        # the run says nothing about this finding.
        where = f"; the program stopped at line {report.line}" if report.status == "error" else ""
        return verdict("not-reached", f"line {line} never ran{where}")
    if diagnostic.code == "TL003":
        nodes, saved = report.growth(diagnostic.range.start.line)
        if nodes > 0 or saved > 0:
            return verdict("confirmed", f"live graph grew by {nodes} nodes and {saved} saved bytes")
        return verdict("refuted", "no growth of the live graph across iterations")
    definition = diagnostic.related_of(Role.DEFINITION)
    if report.status != "error" or report.error_kind not in REUSE_ERRORS:
        return verdict("refuted", "the program ran without a graph-reuse error")
    if diagnostic.code == "TL007" and semantics is Semantics.TORCH and report.error_kind != "inplace":
        return verdict("refuted", f"it failed with {report.error_kind}, not the in-place modification error")
    # one hazard walked by several backwards (the arms of an if) names each as `fails-at`;
    # the run confirms it when its failing stack passes through one of them
    predicted = [r.range.start.line for r in diagnostic.related if r.role is Role.FAILS_AT]
    through = next((line for line in predicted if line in report.stack), None)
    if through is None:
        return verdict("refuted", f"it failed at line {report.line}, not at the predicted backward")
    inside = None if report.line == through else f"it failed at line {report.line}, inside the call at line {through}"
    if definition is None or report.node_line is None:
        return verdict("confirmed", inside)
    if definition.range.start.line <= report.node_line <= definition.range.end.line:
        return verdict("confirmed", inside)
    callers = getattr(report, "node_lines", ())[1:]
    if any(definition.range.start.line <= line <= definition.range.end.line for line in callers):
        return verdict("confirmed", f"the node was created at line {report.node_line}, in a helper "
                                    "called from the definition")
    reused = [line for line in getattr(report, "reused_lines", ())
              if definition.range.start.line <= line <= definition.range.end.line]
    if reused:
        # PyTorch fails on the first freed node that saved tensors; the walk reached the
        # definition's freed node (which saved none, `returns - values`) on its way there
        return verdict("confirmed", f"the backward walked the freed node of line {reused[0]} to the node "
                                    f"created at line {report.node_line}")
    if semantics is Semantics.STRICT and report.error_kind == "tape-consumed":
        # semantics.md §2: once the reused value (or a non-leaf ancestor of it)
        # has no live handle, the strict tape prunes the whole later branch and
        # names that branch's own node instead; the failing call is the proof.
        return verdict("confirmed", "the strict tape pruned the reused branch, so it names the later root")
    return verdict("refuted", f"it failed on the node created at line {report.node_line}")
