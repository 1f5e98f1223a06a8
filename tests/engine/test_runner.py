"""The sandboxed runner: statuses, positions, retention samples, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from processes import write

from tapelint_engine.runner import RunReport, main, run_program

LOOP_BUG = """\
import torch

x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = x.exp()
for step in range(3):
    loss = (feats * w).sum()
    loss.backward()
"""

ACCUMULATE = """\
import torch

w = torch.randn(8, 8, requires_grad=True)
total = 0
for step in range({n}):
    loss = (w.exp() @ w).sum()
    total += loss
print(total.item())
"""


@pytest.mark.parametrize("semantics, kind", [("torch", "second-backward"), ("strict", "tape-consumed")])
def test_failure_positions(tmp_path: Path, semantics: str, kind: str) -> None:
    r = run_program(write(tmp_path, LOOP_BUG), semantics)
    assert (r.status, r.error_kind, r.line, r.node_id, r.node_line, r.consumed_line) == \
        ("error", kind, 8, 2, 5, 8)
    assert RunReport.from_dict(json.loads(r.to_json())) == r


def test_retention_samples_grow(tmp_path: Path) -> None:
    r = run_program(write(tmp_path, ACCUMULATE.format(n=6)), "torch", watch_lines=(6,))
    assert r.status == "ok"
    assert [s[0] for s in r.samples] == [6] * 6
    nodes, saved = r.growth(6)
    assert nodes > 0 and saved > 0
    fixed = ACCUMULATE.format(n=6).replace("total += loss", "total += loss.item()") \
        .replace("print(total.item())", "print(total)")
    r = run_program(write(tmp_path, fixed, "fixed.py"), "torch", watch_lines=(6,))
    assert r.status == "ok" and r.growth(6) == (0, 0)


def test_unsupported_timeout_crash_and_other(tmp_path: Path) -> None:
    r = run_program(write(tmp_path, "import torch\nm = torch.nn.LazyLinear(3)\n"), "torch")
    assert (r.status, r.error, r.line) == ("unsupported", "not supported by the engine: torch.nn.LazyLinear", 2)
    r = run_program(write(tmp_path, "from torch.utils.tensorboard import SummaryWriter\n", "u.py"), "torch")
    assert r.status == "unsupported"
    r = run_program(write(tmp_path, "while True:\n    pass\n", "t.py"), "torch", timeout=1.0)
    assert r.status == "timeout"
    r = run_program(write(tmp_path, "import os\nos.abort()\n", "c.py"), "torch")
    assert r.status == "crash"
    r = run_program(write(tmp_path, "x = [0] * (1 << 31)\n", "m.py"), "torch", memory_mb=256)
    assert r.status == "crash"
    r = run_program(write(tmp_path, "import torch\n\nraise ValueError('boom')\n", "e.py"), "torch")
    assert (r.status, r.error_kind, r.error, r.line) == ("error", "other", "ValueError: boom", 3)


def test_caught_error_is_still_reported(tmp_path: Path) -> None:
    src = LOOP_BUG.replace("    loss.backward()\n", "    try:\n        loss.backward()\n"
                           "    except RuntimeError:\n        pass\n")
    r = run_program(write(tmp_path, src), "torch")
    assert (r.status, r.caught, r.line) == ("error", True, 9)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write(tmp_path, LOOP_BUG)
    assert main(["run", path, "--semantics", "strict"]) == 1
    out = capsys.readouterr().out
    assert "NodeId(2) created at line 5" in out and "failing call: line 8" in out
    assert main([path, "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["error_kind"] == "second-backward"
    assert main([str(tmp_path / "missing.py")]) == 2


def test_torch_backend_matches(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    r = run_program(write(tmp_path, LOOP_BUG), "torch", backend="torch")
    assert (r.status, r.error_kind, r.line, r.node_line) == ("error", "second-backward", 8, 5)


def test_nodes_alive_at_interpreter_shutdown_make_no_noise(tmp_path: Path) -> None:
    """A graph kept by a module that outlives the tape's (numpy's, imported first) is
    freed during interpreter shutdown, after the tape module's globals are gone:
    `Node.__del__` must not print "Exception ignored" then."""
    prog = write(tmp_path, "import torch, numpy\n\nx = torch.ones(3, requires_grad=True)\n"
                           "numpy._kept = (x * 2).sum()\n")
    proc = subprocess.run([sys.executable, "-m", "tapelint", "run", prog], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and ": ok" in proc.stdout, proc.stdout + proc.stderr
    assert "Exception ignored" not in proc.stderr + proc.stdout, proc.stderr
