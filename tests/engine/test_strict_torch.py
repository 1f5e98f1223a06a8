"""burn's strict tape tracked over real PyTorch (`--backend torch --semantics strict`):
a program that reuses a non-leaf node across two backwards fails there as it fails
on the engine (same error, failing line, node id and creation line), and a program
that reuses nothing runs as PyTorch runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint_engine import runner

pytest.importorskip("torch")

HERE = Path(__file__).parent
PROGRAMS = sorted((HERE / "programs").glob("*.py"))

SMALL = {  # program -> (status, failing line, NodeId) on both backends, as semantics.md measures burn
    "loop_hoisted": ("""import torch
x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = x.exp()
for step in range(2):
    loss = (feats * w).sum()
    loss.backward()
""", ("error", 7, 2)),
    "retain_graph_does_not_protect": ("""import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x.exp() * x).sum()
loss.backward(retain_graph=True)
loss.backward()
""", ("error", 5, 3)),
    "shared_add_saves_nothing": ("""import torch
a = torch.ones(2, requires_grad=True)
b = torch.ones(2, requires_grad=True)
z = a + b
(z ** 2).sum().backward()
(z ** 3).sum().backward()
""", ("error", 6, 2)),
    "grad_by_keyword_twice": ("""import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x * x).sum()
torch.autograd.grad(outputs=y, inputs=x, retain_graph=True)
torch.autograd.grad(outputs=y, inputs=x)
""", ("error", 5, 2)),
    "caught_by_the_program": ("""import torch
x = torch.tensor([1.0], requires_grad=True)
y = x * 2
y.backward()
try:
    y.backward()
except Exception:
    pass
""", ("error", 6, 1)),
    "fresh_graph_each_step": ("""import torch
m = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(3):
    loss = torch.nn.functional.mse_loss(m(torch.ones(4, 3)), torch.zeros(4, 1))
    opt.zero_grad()
    loss.backward()
    opt.step()
""", ("ok", None, None)),
}


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("backend", ["engine", "torch"])
def test_strict_runs_agree_with_burns_rule(tmp_path: Path, name: str, backend: str) -> None:
    source, expected = SMALL[name]
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    report = runner.run_program(str(path), "strict", backend=backend, timeout=120)
    assert (report.status, report.line, report.node_id) == expected, report
    if report.status == "error":
        assert report.error_kind == "tape-consumed"
        assert report.error.startswith("Cannot run backward: graph tape has already been consumed at NodeId(")


def test_torch_semantics_on_torch_is_untouched(tmp_path: Path) -> None:
    """The shared `add` saved nothing: PyTorch runs it; only strict semantics rejects it."""
    path = tmp_path / "shared.py"
    path.write_text(SMALL["shared_add_saves_nothing"][0])
    assert runner.run_program(str(path), "torch", backend="torch", timeout=120).status == "ok"


def _outcomes(backend: str) -> dict[str, tuple]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(HERE / "program_runner.py"), backend, "--strict",
                           *map(str, PROGRAMS)], capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(PROGRAMS), proc.stderr[-2000:]
    return {Path(r["path"]).name: (r["status"], r["error_kind"], r["line"]) for r in rows}


def test_realistic_programs_fail_alike_under_strict() -> None:
    """Every realistic program the engine runs gets the same strict outcome and failing
    line from the tracker over PyTorch; at least eight of them reuse a node."""
    engine, torch_ = _outcomes("engine"), _outcomes("torch")
    ran = [n for n in engine if engine[n][0] != "unsupported"]
    assert len(ran) >= 25
    assert {n: torch_[n] for n in ran} == {n: engine[n] for n in ran}
    assert sum(engine[n][1] == "tape-consumed" for n in ran) >= 8
