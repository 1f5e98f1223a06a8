"""PyTorch ground truth: every fixture, run under real PyTorch, does what its
`torch:` header line declares.

* `fails LINE [node N]`: raises "Trying to backward through the graph a second
  time" from the call on LINE (innermost traceback frame in the fixture); with
  `node N`, anomaly mode's forward traceback of the node that could not run
  points at fixture line N.
* `inplace LINE`: raises the in-place modification error from LINE.
* `ok`: runs to the end.
* `grows`: runs to the end, and the graph reachable from the program's
  variables holds nodes created by two different executions of one statement
  (retention across iterations).

All fixtures run in a few worker processes (`torch_fixture_runner.py`), each
importing torch once; see that file for how outcomes are observed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from fixture_spec import fixture_paths, parse_fixture, project_fixture_paths  # noqa: E402

RUNNER = Path(__file__).with_name("torch_fixture_runner.py")
PATHS = fixture_paths() + project_fixture_paths()  # a project's file runs from its folder
TOTAL_TIMEOUT_S = 300

# Programs with a known outcome, run alongside the fixtures: they prove that the
# harness tells the outcomes apart (so that a wrong header cannot pass).
SELF_TESTS = {
    "fails.py": (
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "h = x.exp()\n"
        "loss = h.sum()\n"
        "loss.backward()\n"
        "loss.backward()\n",
        {"kind": "fails", "line": 6, "node": 3, "grows": False},
    ),
    "fails_in_function.py": (
        "import torch\n"
        "def step(loss):\n"
        "    loss.backward()\n"
        "w = torch.tensor([1.0], requires_grad=True)\n"
        "loss = (w * w).sum()\n"
        "for i in range(2):\n"
        "    step(loss)\n",
        {"kind": "fails", "line": 3, "node": 5, "grows": False},
    ),
    "inplace.py": (
        "import torch\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "y = x.exp()\n"
        "y.add_(1)\n"
        "y.sum().backward()\n",
        {"kind": "inplace", "line": 5, "node": None, "grows": False},
    ),
    "grows.py": (
        "import torch\n"
        "w = torch.tensor([1.0], requires_grad=True)\n"
        "total = 0.0\n"
        "for i in range(3):\n"
        "    loss = (w * i).sum()\n"
        "    loss.backward()\n"
        "    total += loss\n",
        {"kind": "ok", "line": None, "node": None, "grows": True},
    ),
    "ok.py": (
        "import torch\n"
        "w = torch.tensor([1.0], requires_grad=True)\n"
        "total = 0.0\n"
        "for i in range(3):\n"
        "    loss = (w * i).sum()\n"
        "    loss.backward()\n"
        "    total += loss.item()\n",
        {"kind": "ok", "line": None, "node": None, "grows": False},
    ),
    "other_error.py": (
        "import torch\n"
        "x = torch.ones(2)\n"
        "x.sum().backward()\n",
        {"kind": "error", "line": 3, "node": None, "grows": False},
    ),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("torch_fixtures")
    selftests = []
    for name, (source, _) in SELF_TESTS.items():
        p = work / name
        p.write_text(source, encoding="utf-8")
        selftests.append(p)
    paths = [str(p) for p in PATHS + selftests]
    n_workers = max(1, min(4, os.cpu_count() or 1, len(paths)))
    chunks = [paths[i::n_workers] for i in range(n_workers)]
    procs = []
    for i, chunk in enumerate(chunks):
        out = work / f"report{i}.json"
        proc = subprocess.Popen(
            [sys.executable, str(RUNNER), str(out), *chunk],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append((proc, out))
    merged: dict = {}
    for proc, out in procs:
        try:
            _, err = proc.communicate(timeout=TOTAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"running the fixtures under PyTorch took more than {TOTAL_TIMEOUT_S} s")
        assert proc.returncode == 0, f"fixture runner crashed:\n{err}"
        merged.update(json.loads(out.read_text(encoding="utf-8")))
    merged["__selftests__"] = {p.name: merged[str(p.resolve())] for p in selftests}
    return merged


@pytest.mark.parametrize("name", sorted(SELF_TESTS))
def test_harness_observes_outcomes(report, name):
    got = dict(report["__selftests__"][name])
    got.pop("error")
    assert got == SELF_TESTS[name][1]


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_fixture_runs_as_declared_under_torch(report, path: Path):
    spec = parse_fixture(path)
    got = report[str(path.resolve())]
    want = spec.torch
    where = f"{path.name}: declared torch: {want.kind}"
    if want.kind == "fails":
        assert got["kind"] == "fails", f"{where} {want.line}, but the run gave {got}"
        assert got["line"] == want.line, f"{where} {want.line}, but it failed at line {got['line']}"
        if want.node_line is not None:
            assert got["node"] == want.node_line, f"{where}: node {want.node_line}, anomaly mode names line {got['node']}"
    elif want.kind == "inplace":
        assert got["kind"] == "inplace", f"{where} {want.line}, but the run gave {got}"
        assert got["line"] == want.line, f"{where} {want.line}, but it failed at line {got['line']}"
    elif want.kind == "ok":
        assert got["kind"] == "ok", f"{where}, but the run gave {got}"
    elif want.kind == "grows":
        assert got["kind"] == "ok", f"{where}, but the run gave {got}"
        assert got["grows"], f"{where}, but no graph retained across iterations is reachable at the end"
    else:  # pragma: no cover - the parser admits no other kind
        pytest.fail(f"unknown outcome {want.kind}")
