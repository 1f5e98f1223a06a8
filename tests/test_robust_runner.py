"""Issue 10, the runner: a per-file time and memory budget enforced by the
kernel, workers that die with their parent, and standard input linted in a
process of its own."""

from __future__ import annotations

import io
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from processes import alive

import tapelint.runner
from tapelint.runner import lint_files
from tapelint.settings import Settings
from tapelint.stdin import lint_stdin

HEADER = "import torch\nw = torch.ones(3, requires_grad=True)\n"
HAZARD = HEADER + "loss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
# Each ends in a second backward: the quick analysis (on CPython's parse)
# finds that hazard, so the file is linted again from libcst's parse, the
# costly part.
TWICE = "loss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
# CPython compiles it, libcst's parser needs seconds of CPU for it (~2 s
# on this machine: 4x the 0.5 s budgets of the tests).
SLOW = HEADER + "x = w.sum()" + " + w.sum()" * 1700 + "\n" + TWICE
# ~160 KB of small functions (just under what the size check refuses at a
# 100 MB budget): over 100 MB to parse and analyse with libcst 1.0 and 1.9
# alike (at ~110 KB, a clean environment with libcst 1.9 stayed under it).
WIDE = HEADER + "".join(f"def f{i}(a):\n    a = [a.sum() + {i} for _ in range(3)]\n" for i in range(2700)) + TWICE
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="budgets and /proc are Linux's")
forked = pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="workers inherit the patch only when forked")


def messages(paths: list[Path], settings: Settings, jobs: int) -> dict[str, list[str]]:
    run = lint_files([str(p) for p in paths], settings, jobs)
    assert not run.crashed
    return {os.path.basename(r.path): [e.message for e in r.errors] + [d.code for d in r.diagnostics] for r in run.results}


@linux_only
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_over_the_time_budget_is_one_line(tmp_path: Path, jobs: int) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "hazard.py").write_text(HAZARD)
    found = messages([tmp_path / "slow.py", tmp_path / "hazard.py"], Settings(file_timeout=0.5), jobs)
    assert found["hazard.py"] == ["TL004"]
    [message] = found["slow.py"]
    assert message.startswith("took more than 0.5 s of CPU time, the per-file budget")
    assert messages([tmp_path / "slow.py"], Settings(), jobs)["slow.py"] == ["TL004"]  # the default is ample


@linux_only
def test_the_time_budget_ends_a_file_when_it_is_spent_not_at_the_next_whole_second() -> None:
    """A budget of 0.2 s ends the process after 0.2 s of CPU, to the
    kernel's tick (a whole-second `RLIMIT_CPU` let it run a full second)."""
    pid = os.fork()
    if pid == 0:  # the child spins under the budget until it is ended
        try:
            with tapelint.runner._budget(Settings(file_timeout=0.2)):
                while True:
                    pass
        finally:
            os._exit(0)
    _, status, usage = os.wait4(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPROF
    assert 0.18 <= usage.ru_utime + usage.ru_stime < 0.5


@linux_only
def test_a_file_over_the_memory_budget_is_one_line(tmp_path: Path) -> None:
    # Through the command line: a worker forked from this test process would
    # inherit its large, partly free heap, which the budget does not count.
    (tmp_path / "wide.py").write_text(WIDE)
    (tmp_path / "hazard.py").write_text(HAZARD)

    def check(*flags: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "tapelint", "check", "--isolated", "-q", "--no-color", "-j", "1",
                               *flags, "wide.py", "hazard.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        return [line for line in done.stdout.splitlines() if line.startswith(("wide.py", "hazard.py"))]

    lines = check("--file-memory-mb", "100")
    assert lines[0].startswith("wide.py: error: needed more than 100 MB, the per-file memory budget")
    assert lines[1].startswith("hazard.py:5:1: TL004")
    assert [line.split(": ", 1)[1].split()[0] for line in check()] == ["TL004", "TL004"]  # the default is ample


def test_budget_flags_reach_the_settings(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.tapelint]\nfile-timeout = 7.5\nfile-memory-mb = 300\n")
    from tapelint.config import Overrides, Resolver

    settings = Resolver().settings_for(str(tmp_path / "a.py"))
    assert (settings.file_timeout, settings.file_memory_mb) == (7.5, 300)
    flagged = Resolver(Overrides(file_timeout=2.0)).settings_for(str(tmp_path / "a.py"))
    assert (flagged.file_timeout, flagged.file_memory_mb) == (2.0, 300)


@forked
def test_a_native_abort_for_memory_is_the_budget_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def abort_like_libcst(source: str, path: str, settings: Settings) -> object:
        os.write(2, b"memory allocation of 123456789 bytes failed\n")
        os.abort()

    monkeypatch.setattr(tapelint.runner, "_linter", lambda: abort_like_libcst)
    (tmp_path / "huge.py").write_text(HEADER)
    run = lint_files([str(tmp_path / "huge.py")], Settings(), 1)
    assert not run.crashed
    [error] = run.results[0].errors
    assert error.message.startswith("needed more than 4096 MB, the per-file memory budget")


@forked
def test_stdin_is_linted_in_a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    def die(source: str, path: str, settings: Settings) -> object:
        os.kill(os.getpid(), signal.SIGKILL)  # as a native crash in the parser would

    monkeypatch.setattr(tapelint.runner, "_linter", lambda: die)
    stdin = lint_stdin(io.BytesIO(HAZARD.encode()), "buffer.py", Settings())
    [error] = stdin.run.results[0].errors
    assert error.message == "internal error: the worker process died while checking this file"


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listing:
                found.update(int(child) for child in listing.read().split())
        except OSError:
            pass
    return found


@linux_only
@pytest.mark.parametrize("kill", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_run_leaves_no_worker(tmp_path: Path, kill: signal.Signals) -> None:
    for i in range(4):
        (tmp_path / f"slow{i}.py").write_text(SLOW)
    process = subprocess.Popen(
        [sys.executable, "-m", "tapelint", "check", "--isolated", "-j", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(workers := children(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(workers) >= 2
        process.send_signal(kill)
        process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in workers)
    finally:
        process.kill()
        process.wait()
