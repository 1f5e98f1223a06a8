"""Issue 10, the sandbox of `run`/`confirm`: process group, hard limits,
minimal environment, temporary working directory, no network where
namespaces allow, an unforgeable-by-accident result channel, a bounded
output tail, and honest statuses and messages."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from processes import alive, write

from tapelint_engine import forkserver, runner
from tapelint_engine.runner import OUTPUT_TAIL, main, network_isolation_available, run_program

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX sessions and limits")


@pytest.fixture(autouse=True, params=["fork server", "fresh interpreter"])
def spawner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every guarantee holds for a child the fork server forks and for one
    started as `python -m` (where there can be no fork server)."""
    if request.param == "fork server" and not forkserver.available():
        pytest.skip("fork servers need fork and pidfds (Linux)")
    monkeypatch.setattr(runner, "USE_FORK_SERVER", request.param == "fork server")


@posix
def test_a_forking_program_finishes_and_its_children_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    path = write(tmp_path, f"""\
        import os, time
        pid = os.fork()
        if pid == 0:
            time.sleep(60)  # holds the output pipe
            os._exit(0)
        open({str(pid_file)!r}, "w").write(str(pid))
        print("parent done")
        """)
    start = time.monotonic()
    report = run_program(path, timeout=20)
    assert report.status == "ok" and time.monotonic() - start < 15
    assert "parent done" in report.output
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


@posix
def test_limits_are_hard(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            raised = True
        except (ValueError, OSError):
            raised = False
        cpu = resource.getrlimit(resource.RLIMIT_CPU)
        print("LIMITS", soft == hard, cpu[0] == cpu[1], raised)
        """)
    report = run_program(path, memory_mb=512)
    assert "LIMITS True True False" in report.output


def test_minimal_environment_and_a_temporary_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_SECRET_TOKEN", "hunter2")
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    path = write(tmp_path, """\
        import os, helper
        print("SECRET", os.environ.get("CI_SECRET_TOKEN"))
        print("CWD", os.getcwd())
        print("HELPER", helper.VALUE)
        open("scratch.txt", "w").write("x")
        """)
    report = run_program(path)
    assert report.status == "ok", report
    lines = dict(line.split(" ", 1) for line in report.output.splitlines())
    assert lines["SECRET"] == "None" and lines["HELPER"] == "42"
    assert lines["CWD"] != str(tmp_path) and not os.path.exists(lines["CWD"])  # removed afterwards
    assert not (tmp_path / "scratch.txt").exists()


@pytest.mark.skipif(not network_isolation_available(), reason="no unprivileged user/network namespaces here")
def test_no_network_where_namespaces_allow(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        import socket
        print("INTERFACES", sorted(name for _, name in socket.if_nameindex()))
        """)
    report = run_program(path)
    assert report.network_isolated
    assert "INTERFACES ['lo']" in report.output


@posix
@pytest.mark.parametrize("unshare", ["missing", "refused"])
def test_without_namespaces_the_program_runs_with_the_network_reachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unshare: str
) -> None:
    # No `unshare` on PATH, or one that fails as it does where unprivileged
    # user namespaces are disabled (containers, hardened kernels): the
    # program still runs, and the report says the network was not isolated.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if unshare == "refused":
        fake = bin_dir / "unshare"
        fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    network_isolation_available.cache_clear()
    try:
        assert not network_isolation_available()
        path = write(tmp_path, """\
            import socket
            print("INTERFACES", len(socket.if_nameindex()))
            """)
        report = run_program(path)
        assert report.status == "ok", report
        assert not report.network_isolated
        assert "INTERFACES" in report.output
    finally:
        network_isolation_available.cache_clear()  # later tests probe the real platform


def test_the_result_cannot_be_forged_through_a_file(tmp_path: Path) -> None:
    # The old channel was a report file named on the child's command line.
    path = write(tmp_path, """\
        import json, sys, os
        for arg in sys.argv + open("/proc/self/cmdline").read().split("\\0"):
            if arg.endswith(".json"):
                open(arg, "w").write(json.dumps({"status": "ok"}))
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"status": "ok"}\\n')
            except OSError:
                pass
        raise SystemExit(3)
        """)
    report = run_program(path)
    assert report.status == "error" and report.error == "SystemExit: 3"


def test_the_output_kept_is_a_bounded_tail(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        import sys
        chunk = "x" * 1023 + "\\n"
        for _ in range(50 * 1024):  # 50 MB
            sys.stdout.write(chunk)
        print("THE END")
        """)
    report = run_program(path, timeout=60)
    assert report.status == "ok"
    assert len(report.output) <= OUTPUT_TAIL and report.output.endswith("THE END\n")


def test_a_missing_third_party_module_is_unsupported(tmp_path: Path) -> None:
    path = write(tmp_path, "import torch\nimport torchvision_not_installed_here\n")
    report = run_program(path)
    assert report.status == "unsupported"
    assert report.error == "needs the module `torchvision_not_installed_here`, which is not available"
    assert report.line == 2


def test_messages(tmp_path: Path) -> None:
    report = run_program(write(tmp_path, "raise KeyboardInterrupt\n"))
    assert report.error == "KeyboardInterrupt"
    report = run_program(write(tmp_path, "import os\nos._exit(0)\n", "quiet.py"))
    assert (report.status, report.detail) == ("crash", "child exited with 0")
    report = run_program(write(tmp_path, "import os, sys\nprint('last words', file=sys.stderr)\nos._exit(4)\n", "loud.py"))
    assert report.detail == "child exited with 4; last words"


def test_run_streams_the_program_output_then_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\n")
    assert main(["run", path]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("to stdout\n") and out.splitlines()[1].startswith(f"{path}: ok")
    assert err == "to stderr\n"
    assert main(["run", path, "--format", "json"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["output"].count("to stdout") == 1  # not echoed in JSON mode


def test_run_refuses_a_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "print(1)\n"}]}))
    assert main(["run", str(path)]) == 2
    assert "notebooks are not run" in capsys.readouterr().err
