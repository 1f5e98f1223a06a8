"""Realistic training programs (GANs, RL agents, CNNs, RNN language models, PINNs,
meta-learning, custom Functions, transformers; `programs/`) run on the engine and
on real PyTorch: the engine must reach PyTorch's outcome (ok, or which graph error)
at the same failing line, and print PyTorch's numbers (both started from the
engine's default seed, `program_runner.py`). Programs using an API the engine does not model are
listed with that API and must stay `unsupported` there until it is modelled (then
this test fails and the entry goes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from agreement import mkl_on_intel  # noqa: E402
from program_table import printed  # noqa: E402

HERE = Path(__file__).parent
PROGRAMS = sorted((HERE / "programs").glob("*.py"))
UNSUPPORTED: dict[str, str] = {}  # program -> the API the engine lacks (none today)


def _outcomes(backend: str) -> dict[str, dict]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(HERE / "program_runner.py"), backend,
                           *map(str, PROGRAMS)], capture_output=True, text=True, timeout=600,
                          env=env, stdin=subprocess.DEVNULL)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(PROGRAMS), proc.stderr[-2000:]
    return {Path(r["path"]).name: r for r in rows}


@pytest.fixture(scope="module")
def outcomes() -> tuple[dict, dict]:
    return _outcomes("engine"), _outcomes("torch")


def _key(r: dict) -> tuple:
    return r["status"], r["error_kind"], r["line"]


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_program_agrees_with_pytorch(outcomes, name: str) -> None:
    engine, torch_ = outcomes[0][name], outcomes[1][name]
    if name in UNSUPPORTED:
        assert engine["status"] == "unsupported" and UNSUPPORTED[name] in engine["error"]
        assert torch_["status"] == "ok"
        return
    assert torch_["status"] in ("ok", "error") and torch_["error_kind"] != "other", torch_
    assert _key(engine) == _key(torch_), (engine, torch_)


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_program_prints_pytorchs_numbers(outcomes, name: str) -> None:
    if mkl_on_intel():
        pytest.skip("PyTorch may draw dropout masks and categorical samples through MKL here (docs/engine.md)")
    engine, torch_ = outcomes[0][name]["output"], outcomes[1][name]["output"]
    assert printed(engine, torch_) != "differ", (engine, torch_)


def test_the_corpus_is_realistic_and_agrees(outcomes) -> None:
    engine, torch_ = outcomes
    agree = [n for n in engine if _key(engine[n]) == _key(torch_[n])]
    failing = [n for n in torch_ if torch_[n]["status"] == "error"]
    assert len(PROGRAMS) >= 20 and len(failing) >= 8
    assert len(agree) / len(PROGRAMS) >= 0.9, sorted(set(engine) - set(agree))
