"""The sandbox's fork server (`tapelint_engine.forkserver`): what a forked
child holds and sees is what a fresh `python -m` child did, runs from many
threads do not mix, and the server follows its parent's life."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from processes import alive, write

from tapelint_engine import forkserver, runner
from tapelint_engine.runner import run_program

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="fork servers need fork and pidfds (Linux)")


@pytest.fixture(autouse=True)
def _through_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "USE_FORK_SERVER", True)


def sleeper(tmp_path: Path) -> tuple[str, Path]:
    """A program that writes its pid to the returned file, then sleeps for a minute."""
    pid_file = tmp_path / "pid"
    path = write(tmp_path, f"""\
        import os, time
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
        """, "sleeper.py")
    return path, pid_file


def this_process_server() -> forkserver.ForkServer:
    """The server `run_program` uses in this process."""
    return forkserver.server(runner._UNSHARE if runner.network_isolation_available() else (), {})


def printed(output: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in output.splitlines() if " " in line)


def test_a_forked_child_holds_only_its_own_descriptors(tmp_path: Path) -> None:
    # Another run's reply socket or pipes would let one program forge another's result.
    path = write(tmp_path, """\
        import os
        print("FDS", sorted(int(fd) for fd in os.listdir("/proc/self/fd")))
        """)
    slow = write(tmp_path, "import time\ntime.sleep(3)\n", "slow.py")
    with ThreadPoolExecutor(max_workers=2) as pool:
        busy = pool.submit(run_program, slow)  # a run the server holds descriptors for meanwhile
        time.sleep(0.5)
        report = run_program(path)
        assert busy.result().status == "ok"
    assert report.status == "ok", report
    fds = ast.literal_eval(printed(report.output)["FDS"])
    # stdin, stdout, stderr, and the descriptor listing /proc/self/fd; the result
    # pipe is closed-on-exec, not closed: the program could find it, as before.
    assert len(fds) == 5 and fds[:3] == [0, 1, 2], fds


def test_each_run_has_its_own_directory_environment_and_seeds(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        import os, random, sys, tempfile
        import numpy
        print("CWD", os.getcwd())
        print("TMP", tempfile.gettempdir())
        print("HOME", os.environ["HOME"])
        print("PATH0", sys.path[1])
        print("RANDOM", random.random(), numpy.random.rand())
        print("TOKEN", "TAPELINT_RESULT_TOKEN" in os.environ, "TAPELINT_RESULT_FD" in os.environ)
        """)
    first, second = (printed(run_program(path).output) for _ in range(2))
    for seen in (first, second):
        assert seen["CWD"] == seen["TMP"] == seen["HOME"] == seen["PATH0"], seen
        assert seen["TOKEN"] == "False False"
    assert first["CWD"] != second["CWD"]
    python_draws, numpy_draws = zip(first["RANDOM"].split(), second["RANDOM"].split())
    assert python_draws[0] != python_draws[1] and numpy_draws[0] != numpy_draws[1]


def test_runs_from_many_threads_keep_their_own_output_and_result(tmp_path: Path) -> None:
    programs = [write(tmp_path, f"print('RUN {i}')\nraise SystemExit({i})\n", f"p{i}.py") for i in range(1, 9)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        reports = list(pool.map(run_program, programs))
    for i, report in enumerate(reports, start=1):
        assert report.output == f"RUN {i}\n" and report.error == f"SystemExit: {i}", report


def test_a_server_that_died_is_started_again(tmp_path: Path) -> None:
    path = write(tmp_path, "print('ran')\n")
    assert run_program(path).status == "ok"
    first = this_process_server()
    first.process.kill()
    first.process.wait()
    report = run_program(path)
    assert report.status == "ok" and report.output == "ran\n", report
    assert this_process_server() is not first


def test_a_timed_out_child_is_killed_and_the_server_goes_on(tmp_path: Path) -> None:
    path, pid_file = sleeper(tmp_path)
    report = run_program(path, timeout=2)
    assert report.status == "timeout"
    assert not alive(int(pid_file.read_text()))
    assert run_program(write(tmp_path, "print('next')\n", "next.py")).output == "next\n"


def test_the_server_kills_its_children_and_ends_when_its_parent_dies(tmp_path: Path) -> None:
    program, pid_file = sleeper(tmp_path)
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import os, threading, time
        from tapelint_engine.runner import run_program
        threading.Thread(target=run_program, args=({program!r},), daemon=True).start()
        while not os.path.exists({str(pid_file)!r}):
            time.sleep(0.05)
        time.sleep(0.2)
        os._exit(0)  # no atexit: the server learns of it from its socket alone
        """)], env={**os.environ, "TAPELINT_FORK_SERVER": "1"})
    assert parent.wait(timeout=60) == 0
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_a_module_that_fails_to_preload_is_left_to_the_child() -> None:
    forkserver.preload(("tapelint_engine.no_such_module", "tapelint_engine.errors"))
    assert "tapelint_engine.errors" in sys.modules and "tapelint_engine.no_such_module" not in sys.modules


def test_a_run_whose_server_dies_reports_it_and_its_program_is_killed(tmp_path: Path) -> None:
    path, pid_file = sleeper(tmp_path)
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(run_program, path, timeout=30)
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        this_process_server().process.kill()
        report = running.result()
    assert report.status == "crash" and report.detail == "the fork server ended before the child did", report
    assert not alive(int(pid_file.read_text()))
