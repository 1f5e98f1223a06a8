"""The parallel runner: results in the order given whatever order the
workers take the files in, and no syntax tree outliving its file."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from tapelint.lint import lint_source
from tapelint.runner import lint_files, lint_one
from tapelint.settings import Settings

FIXTURES = Path(__file__).parents[1] / "fixtures"
HAZARD = "import torch\nw = torch.ones(2, requires_grad=True)\nf = w.exp()\nfor _ in range(2):\n    (f * 2).sum().backward()\n"


def test_results_come_back_in_the_given_order(tmp_path: Path) -> None:
    # Workers take the largest files first; the results must not follow them.
    paths = []
    for index in range(12):
        path = tmp_path / f"f{index:02}.py"
        path.write_text(HAZARD + "x = 1\n" * (index * 37 % 11) * 50)
        paths.append(str(path))
    # This process's deep-stack thread exists before the workers fork: each
    # forked worker must start its own (the parent's does not come along).
    assert [d.code for d in lint_one(paths[0], Settings()).result.diagnostics] == ["TL001"]
    box: list = []
    thread = threading.Thread(target=lambda: box.append(lint_files(paths, Settings(), jobs=2)), daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert box, "the workers hung (a forked worker waiting on its parent's lint thread?)"
    [run] = box
    assert [r.path for r in run.results] == paths
    assert all([d.code for d in r.diagnostics] == ["TL001"] for r in run.results)


def test_linting_leaves_no_reference_cycles() -> None:
    """With no cycles, reference counting frees a file's tree as soon as its
    lint ends; a cycle through the analysis keeps the whole tree resident
    until the next full collection (and makes that collection walk it)."""
    sources = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))]
    gc.collect()
    gc.disable()
    try:
        for source in sources:
            lint_source(source, "fixture.py", Settings())
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0


def test_the_deep_stack_thread_survives_a_failing_task() -> None:
    from tapelint.runner import Outcome, _with_deep_stack

    def explode(path: str, settings: Settings) -> Outcome:
        raise SystemExit("boom")

    crashed = _with_deep_stack(explode, "a.py", Settings())
    assert crashed.crashed and "SystemExit: boom" in crashed.result.errors[0].message
    again = _with_deep_stack(lambda path, settings: Outcome(lint_source(HAZARD, path, settings)), "b.py", Settings())
    assert [d.code for d in again.result.diagnostics] == ["TL001"]


def test_deep_recursion_runs_on_the_big_stack() -> None:
    import sys

    from tapelint.runner import Outcome, _with_deep_stack

    def deep(path: str, settings: Settings, depth: int = 0) -> Outcome:
        # 20,000 Python frames: past the default limit and an 8 MB C stack's reach.
        return deep(path, settings, depth + 1) if depth < 20_000 else Outcome(lint_source("x = 1\n", path, settings))

    assert sys.getrecursionlimit() < 20_000
    assert not _with_deep_stack(deep, "c.py", Settings()).crashed
