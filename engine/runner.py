"""Run one program in a sandboxed subprocess and report what happened.

This module imports neither numpy nor torch: the linter can call it freely.
The child (`python -m tapelint_engine.child`) does the work and sends the
report over an inherited pipe; whatever happens to the child (timeout, crash,
limits) the parent turns into a `RunReport` instead of an exception.
"""

from __future__ import annotations

import argparse
import codecs
import functools
import io
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from . import forkserver

SANDBOX = """\
What the sandbox of `run` and `confirm` (and of their `--graph` recording)
isolates: the program runs in a child process in its own session (it and every process it starts are killed
when it ends or times out), under hard limits it cannot raise (address space
--memory-mb, CPU time --timeout), with a minimal environment (PATH, HOME,
LANG, thread settings, and PYTHONPATH if set; no other variable of yours,
so no CI secrets), in a
fresh temporary working directory that is deleted afterwards (its own
folder is on sys.path, so its imports work; relative data paths do not),
and, where unprivileged user and network namespaces are available (probed
with `unshare`), without network. Its result travels over an inherited pipe
with a per-run token, not a file it could overwrite.
Where the platform allows (Linux), each run is forked from a server process
started this way once, which has imported numpy and the engine already
(`TAPELINT_FORK_SERVER=0`: a fresh interpreter for every run).
What it does not isolate: the file system (the program can read and write
whatever your user can, outside the working directory too), other local
resources (GPUs, shared memory), and, where namespaces are unavailable, the
network. A program written to attack tapelint can still forge its own
result: run only code you would run yourself."""

STATUSES = ("ok", "error", "timeout", "unsupported", "crash")
ERROR_KINDS = ("second-backward", "tape-consumed", "inplace", "other")
OUTPUT_TAIL = 4000
DEFAULT_MEMORY_MB = 1024  # what confirm's runs get (run has --memory-mb)


@dataclass(frozen=True)
class RunReport:
    """The outcome of one run. Lines are 1-based lines of the user's file."""

    status: str
    error_kind: str | None = None
    error: str | None = None  # first line of the message
    line: int | None = None  # the failing call (the innermost of the program's frames)
    node_id: int | None = None  # the missing/freed/modified node
    node_line: int | None = None  # where that node was created
    consumed_line: int | None = None  # the backward that consumed or freed it
    detail: str | None = None
    samples: tuple[tuple[int, int, int], ...] = ()  # (line, live_nodes, saved_bytes)
    semantics: str = "torch"
    backend: str = "engine"
    path: str = ""
    duration_s: float = 0.0
    output: str = ""  # tail of the program's stdout and stderr
    caught: bool = False  # the error was raised, then caught by the program
    node_lines: tuple[int, ...] = ()  # the node's creation stack in the file, innermost first
    stack: tuple[int, ...] = ()  # the failing call's stack in the file, outermost first (ends at `line`)
    reused_lines: tuple[int, ...] = ()  # second backward: lines of the freed nodes its walk reached (engine)
    reach_lines: tuple[int, ...] = ()  # the lines asked about...
    reached: tuple[int, ...] = ()  # ...and which of them ran
    network_isolated: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["samples"] = [list(s) for s in self.samples]
        d["node_lines"] = list(self.node_lines)
        d["stack"] = list(self.stack)
        d["reused_lines"] = list(self.reused_lines)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunReport:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["samples"] = tuple(tuple(s) for s in known.get("samples", ()))
        known["node_lines"] = tuple(known.get("node_lines", ()))
        known["stack"] = tuple(known.get("stack", ()))
        known["reused_lines"] = tuple(known.get("reused_lines", ()))
        known["reached"] = tuple(known.get("reached", ()))
        known["reach_lines"] = tuple(known.get("reach_lines", ()))
        return cls(**known)

    def growth(self, line: int) -> tuple[int, int]:
        """(live nodes, saved bytes) at the last sample of `line` minus the second one.
        The first execution precedes the loop's steady state (the previous iteration's
        loss is not alive yet), so it is skipped; needs three samples."""
        pts = [s for s in self.samples if s[0] == line]
        if len(pts) < 3:
            return 0, 0
        return pts[-1][1] - pts[1][1], pts[-1][2] - pts[1][2]


def run_program(path: str, semantics: str = "torch", *, timeout: float = 30.0,
                memory_mb: int = DEFAULT_MEMORY_MB, watch_lines: tuple[int, ...] = (),
                backend: str = "engine", reach_lines: tuple[int, ...] = (),
                echo: Echo | None = None) -> RunReport:
    """Run `path` on the engine (or real PyTorch) in a sandboxed subprocess (see
    `SANDBOX`); never raises for the program's sake: a timeout, crash or
    unsupported API is a status. `reach_lines` are reported back in `reached`
    when they ran; `echo(stream, data)` sees the program's output as it comes."""
    if semantics not in ("torch", "strict"):
        raise ValueError(f"unknown semantics {semantics!r}")
    if backend not in ("engine", "torch"):
        raise ValueError(f"unknown backend {backend!r}")
    base = RunReport(status="crash", semantics=semantics, backend=backend, path=path)
    program = os.path.abspath(path)
    arguments = ["--semantics", semantics, "--backend", backend, "--memory-mb", str(memory_mb),
                 "--cpu-seconds", str(cpu_seconds(timeout)), "--watch", ",".join(map(str, watch_lines)),
                 "--reach", ",".join(map(str, reach_lines)), program]
    with tempfile.TemporaryDirectory(prefix="tapelint-run-") as home:
        outcome = run_child("tapelint_engine.child", arguments, timeout=timeout, home=home, echo=echo)
    base = replace(base, duration_s=outcome.elapsed, output=outcome.output,
                   network_isolated=outcome.network_isolated, reach_lines=tuple(reach_lines))
    if outcome.error is not None:
        return replace(base, detail=outcome.error)
    if outcome.timed_out:
        return replace(base, status="timeout", detail=f"no result within {timeout:g} s")
    if outcome.result is None:
        return replace(base, detail=outcome.why_no_result())
    observed = {field: getattr(base, field) for field in ("duration_s", "output", "network_isolated", "reach_lines")}
    return RunReport.from_dict({**outcome.result, **observed, "semantics": semantics, "backend": backend,
                                "path": path})


Echo = Callable[[str, bytes], None]


@dataclass(frozen=True)
class ChildOutcome:
    """What became of one sandboxed child: its result message (None if it
    sent none), or why not."""

    returncode: int
    elapsed: float
    tail: bytes
    network_isolated: bool
    result: dict[str, Any] | None = None
    timed_out: bool = False
    error: str | None = None  # the child could not be started

    @property
    def output(self) -> str:
        """The tail of the child's stdout and stderr, as text."""
        return self.tail.decode("utf-8", errors="replace")[-OUTPUT_TAIL:]

    def why_no_result(self) -> str:
        """How the child ended, with the last lines it wrote, when it sent no result."""
        code = self.returncode
        why = f"child exited with {code}" if code >= 0 else f"child killed by signal {-code}"
        last = _last_lines(self.output)
        return f"{why}; {last}" if last else why


def cpu_seconds(timeout: float) -> int:
    """The child's CPU limit for a wall-clock `timeout`."""
    return max(1, int(timeout) + 1)


def run_child(module: str, arguments: Sequence[str], *, timeout: float, home: str,
              echo: Echo | None = None) -> ChildOutcome:
    """The sandbox's child API: run `python -m module *arguments` as described
    in `SANDBOX` (its own session, minimal environment, working directory
    `home`, no network where namespaces allow), killed with everything it
    started when it ends or after `timeout` seconds. Where it can, this
    process's fork server (`forkserver`) forks the child, numpy and the
    engine already imported. The module sets its own hard limits
    (`tapelint_engine.child._limit`) and sends one JSON object over
    `tapelint_engine.child._result_channel()`; that object is `result`."""
    token = secrets.token_hex(16)
    isolate = network_isolation_available()
    env = {**_child_env(home), "TAPELINT_RESULT_TOKEN": token}
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    result_read, result_write = os.pipe()
    start = time.monotonic()
    try:
        proc = _start(module, arguments, env, home, isolate, (out_write, err_write, result_write))
    except (OSError, forkserver.ServerLost) as exc:
        for fd in (out_read, err_read, result_read):
            os.close(fd)
        return ChildOutcome(-1, 0.0, b"", isolate, error=f"could not start the child: {exc}")
    finally:
        for fd in (out_write, err_write, result_write):
            os.close(fd)
    tail = _Tail(OUTPUT_TAIL * 4)
    readers = [threading.Thread(target=_pump, args=(os.fdopen(fd, "rb"), name, tail, echo), daemon=True)
               for fd, name in ((out_read, "stdout"), (err_read, "stderr"))]
    message = bytearray()
    result_reader = threading.Thread(target=_read_all, args=(result_read, message, _RESULT_CAP), daemon=True)
    for thread in (*readers, result_reader):
        thread.start()
    timed_out = False
    lost: str | None = None
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    except forkserver.ServerLost as exc:
        lost = str(exc)
    finally:
        forkserver.kill_group(proc.pid)  # the program's own children too, finished or not
        if lost is None:
            try:
                proc.wait()
            except forkserver.ServerLost as exc:
                lost = str(exc)
    elapsed = time.monotonic() - start
    # A child that left the group (its own setsid) may still hold the pipes: do not wait for it.
    for thread in (*readers, result_reader):
        thread.join(timeout=2.0)
    result = _accept(bytes(message), token)
    if lost is not None:
        return ChildOutcome(-1, elapsed, tail.value(), isolate, result, error=lost)
    assert proc.returncode is not None
    return ChildOutcome(proc.returncode, elapsed, tail.value(), isolate, result, timed_out and result is None)


def _start(module: str, arguments: Sequence[str], env: dict[str, str], home: str, isolate: bool,
           fds: tuple[int, int, int]) -> subprocess.Popen[bytes] | forkserver.Forked:
    """The child, forked by this process's fork server where there can be one,
    else started as `python -m module`; `fds` are its stdout, stderr and result pipe."""
    prefix = _UNSHARE if isolate else ()
    stdout, stderr, result = fds
    if USE_FORK_SERVER and forkserver.available():
        return forkserver.server(prefix, _child_env(home)).spawn(module, arguments, home, env, stdout, stderr,
                                                                 result)
    return subprocess.Popen([*prefix, sys.executable, "-m", module, *arguments], stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr, env={**env, "TAPELINT_RESULT_FD": str(result)},
                            cwd=home, pass_fds=(result,), start_new_session=True)


# `TAPELINT_FORK_SERVER=0`: every child is a fresh `python -m` (to compare, or to rule the server out).
USE_FORK_SERVER = os.environ.get("TAPELINT_FORK_SERVER", "1") != "0"


_RESULT_CAP = 64 * 2**20


def _read_all(fd: int, into: bytearray, cap: int) -> None:
    with os.fdopen(fd, "rb") as stream:
        while chunk := stream.read(65536):
            if len(into) < cap:
                into.extend(chunk)


def _accept(message: bytes, token: str) -> dict[str, Any] | None:
    """The JSON after the last token line: whatever else reached the pipe
    (a program writing to every descriptor it has) is ignored."""
    marker = b"\n" + token.encode() + b"\n"
    at = message.rfind(marker)
    if at < 0:
        return None
    body = message[at + len(marker):]
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


class _Tail:
    """The last `limit` bytes of the program's output, whatever it writes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.data.extend(chunk)
            if len(self.data) > 2 * self.limit:
                del self.data[:-self.limit]

    def value(self) -> bytes:
        with self.lock:
            return bytes(self.data[-self.limit:])


def _pump(stream: io.BufferedReader, name: str, tail: _Tail, echo: Echo | None) -> None:
    with stream:
        while chunk := stream.read1(65536):
            tail.add(chunk)
            if echo is not None:
                echo(name, chunk)


def _child_env(home: str) -> dict[str, str]:
    """A minimal environment: no variable of the parent's reaches the program."""
    env = {
        "PATH": os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), "/usr/bin", "/bin"])),
        "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
    }
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"  # BLAS thread pools reserve address space the limit would count
    if "PYTHONPATH" in os.environ:  # how this interpreter finds the engine when it is not installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _last_lines(output: str, count: int = 3) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])[-800:]


_UNSHARE = ("unshare", "--user", "--map-root-user", "--net", "--")


@functools.lru_cache(maxsize=1)
def network_isolation_available() -> bool:
    """Whether unprivileged user and network namespaces work here (probed once)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    try:
        probe = subprocess.run([*_UNSHARE, sys.executable, "-c", "import socket; socket.if_nameindex()"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


# ---------------------------------------------------------------------------- CLI


def format_text(r: RunReport) -> str:
    head = f"{r.path}: {r.status} (semantics {r.semantics}, backend {r.backend}, {r.duration_s:.2f} s)"
    lines = [head]
    if r.error:
        lines.append(f"  {r.error_kind or 'error'}: {r.error}")
    if r.line is not None:
        outer = r.stack[:-1]
        inside = (f" (inside the call at line {outer[0]})" if len(outer) == 1 else
                  f" (inside the calls at lines {', '.join(map(str, outer))})" if outer else "")
        lines.append(f"  failing call: line {r.line}{inside}")
    if r.node_id is not None or r.node_line is not None:
        node = f"NodeId({r.node_id})" if r.node_id is not None else "node"
        where = f" created at line {r.node_line}" if r.node_line is not None else ""
        lines.append(f"  missing node: {node}{where}")
    if r.consumed_line is not None:
        lines.append(f"  consumed by the backward at line {r.consumed_line}")
    if r.caught:
        lines.append("  (the program caught this error and went on)")
    if r.detail and r.status != "ok":
        lines.append("  " + r.detail.strip().replace("\n", "\n  "))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`tapelint run FILE [--semantics torch|strict] [--backend engine|torch] [--format text|json]`.
    Exit 0: ran clean; 1: the program failed; 2: unsupported, timeout, crash or usage.
    In text mode the program's own output is shown as it runs, then the verdict."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        args = args[1:]
    parser = argparse.ArgumentParser(prog="tapelint run", epilog=SANDBOX,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Execute a PyTorch program on the tapelint engine.")
    parser.add_argument("file")
    parser.add_argument("--semantics", choices=("torch", "strict"), default="torch")
    parser.add_argument("--backend", choices=("engine", "torch"), default="engine")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--memory-mb", type=int, default=1024)
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not os.path.isfile(ns.file):
        print(f"tapelint run: no such file: {ns.file}", file=sys.stderr)
        return 2
    if ns.file.endswith(".ipynb"):
        print(f"tapelint run: {ns.file}: notebooks are not run; export the code cells to a script first"
              " (`jupyter nbconvert --to script`)", file=sys.stderr)
        return 2
    report = run_program(ns.file, ns.semantics, timeout=ns.timeout, memory_mb=ns.memory_mb,
                         backend=ns.backend, echo=_echo_to_terminal() if ns.format == "text" else None)
    print(report.to_json() if ns.format == "json" else format_text(report))
    return {"ok": 0, "error": 1}.get(report.status, 2)


def _echo_to_terminal() -> Echo:
    """The program's output on ours, as `python prog.py` would show it."""
    decoders = {name: codecs.getincrementaldecoder("utf-8")("replace") for name in ("stdout", "stderr")}
    lock = threading.Lock()

    def echo(name: str, data: bytes) -> None:
        stream = sys.stdout if name == "stdout" else sys.stderr
        with lock:
            stream.write(decoders[name].decode(data))
            stream.flush()

    return echo


if __name__ == "__main__":
    sys.exit(main())
