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

All fixtures run in a few worker processes (`declared_runs.run_under_torch`),
each importing torch once; see `torch_fixture_runner.py` for how outcomes are
observed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from declared_runs import assert_torch_run, run_under_torch  # noqa: E402
from fixture_spec import fixture_paths, parse_fixture, project_fixture_paths  # noqa: E402

PATHS = fixture_paths() + project_fixture_paths()  # a project's file runs from its folder

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
    merged: dict = run_under_torch(PATHS + selftests, work)
    merged["__selftests__"] = {p.name: merged[str(p.resolve())] for p in selftests}
    return merged


@pytest.mark.parametrize("name", sorted(SELF_TESTS))
def test_harness_observes_outcomes(report, name):
    got = dict(report["__selftests__"][name])
    got.pop("error")
    assert got == SELF_TESTS[name][1]


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_fixture_runs_as_declared_under_torch(report, path: Path):
    assert_torch_run(report[str(path.resolve())], parse_fixture(path).torch, path.name)
