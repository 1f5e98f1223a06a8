"""Running programs with a declared outcome (fixture headers, rule examples)
under real PyTorch and on the engine, and judging each run against its
declaration (`fixture_spec.Outcome`) — one harness for every such program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fixture_spec import FixtureSpec, Outcome

RUNNER = Path(__file__).with_name("torch_fixture_runner.py")
TORCH_TIMEOUT_S = 300


def run_under_torch(paths: Sequence[Path], work: Path, runner: Path = RUNNER,
                    workers: int = 4) -> dict[str, dict[str, Any]]:
    """What each program did under real PyTorch (`runner`, by default
    `torch_fixture_runner.py`), by resolved path, run in a few worker
    processes that import torch once."""
    names = [str(p) for p in paths]
    n_workers = max(1, min(workers, os.cpu_count() or 1, len(names)))
    procs = []
    for i in range(n_workers):
        out = work / f"{runner.stem}_report{i}.json"
        proc = subprocess.Popen([sys.executable, str(runner), str(out), *names[i::n_workers]],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append((proc, out))
    merged: dict[str, dict[str, Any]] = {}
    for proc, out in procs:
        try:
            _, err = proc.communicate(timeout=TORCH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"running the programs under PyTorch took more than {TORCH_TIMEOUT_S} s")
        assert proc.returncode == 0, f"torch runner crashed:\n{err}"
        merged.update(json.loads(out.read_text(encoding="utf-8")))
    return merged


def assert_torch_run(got: dict[str, Any], want: Outcome, name: str) -> None:
    """`got` (one entry of `run_under_torch`) did what `want` declares."""
    where = f"{name}: declared torch: {want.kind}"
    if want.kind in ("fails", "inplace"):
        assert got["kind"] == want.kind, f"{where} {want.line}, but the run gave {got}"
        assert got["line"] == want.line, f"{where} {want.line}, but it failed at line {got['line']}"
        if want.node_line is not None:
            assert got["node"] == want.node_line, f"{where}: node {want.node_line}, anomaly mode names line {got['node']}"
    elif want.kind == "ok":
        assert got["kind"] == "ok", f"{where}, but the run gave {got}"
    elif want.kind == "grows":
        assert got["kind"] == "ok", f"{where}, but the run gave {got}"
        assert got["grows"], f"{where}, but no graph retained across iterations is reachable at the end"
    else:  # pragma: no cover - the parser admits no other kind
        pytest.fail(f"unknown outcome {want.kind}")


def watch_lines(spec: FixtureSpec, profile: str) -> tuple[int, ...]:
    """The lines an engine run under `profile` samples for growth: the
    accumulating statements, or for a carried value the line where the other
    semantics fails."""
    lines = {e.line for e in spec.expects if e.code == "TL003"}
    other = spec.strict if profile == "torch" else spec.torch
    if getattr(spec, profile).kind == "grows" and not lines and other.line:
        lines.add(other.line)
    return tuple(sorted(lines))


def assert_engine_run(report: Any, want: Outcome, watched: Sequence[int]) -> None:
    """An engine `RunReport` did what `want` declares; growth is judged on the
    `watched` lines the run sampled."""
    assert report.status in ("ok", "error"), f"{report.status}: {report.detail} {report.output[-500:]}"
    if want.kind in ("ok", "grows"):
        assert report.status == "ok", f"{report.error} at line {report.line}"
        if want.kind == "grows":
            assert any(sum(report.growth(line)) > 0 for line in watched), report.samples
        return
    kinds = {"fails": ("second-backward", "tape-consumed"), "inplace": ("inplace",)}[want.kind]
    assert report.status == "error" and report.error_kind in kinds, f"{report.error_kind}: {report.error}"
    assert report.line == want.line
    if want.node_line is not None:
        assert report.node_line == want.node_line
