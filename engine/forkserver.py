"""The sandbox's fork server: one process per parent that imports numpy and
the engine once, then forks a child for each run.

Started afresh, `python -m tapelint_engine.child` spends 0.42 s of CPU
before the program's first line, most of it importing numpy and the engine;
`confirm` over a project, and the test suite's thousand runs, paid that for
every run. The server pays it once per parent process. The sandbox
(`runner.SANDBOX`) is the same: the server is started as a child was (its own
session, the minimal environment, no network where namespaces allow), and
each forked child gets its own session, working directory, environment,
pipes and hard limits (set by the module it runs, as before), and a fresh
seed for numpy's global generator (Python's reseeds itself after a fork).

The protocol, over a `SOCK_SEQPACKET` socket pair: the parent sends one
message per run, JSON `{module, argv, cwd, env}` with four descriptors (a
reply socket, the child's stdout, its stderr, its result pipe). The server
forks; the child calls `module.main(argv)` and exits as `python -m module`
would. The server replies `{"pid": …}` at once and `{"returncode": …}` once
it has reaped the child (a pidfd per child says when). When the parent's end
closes, the server kills what it started and exits.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

# What every run imports before the program's first line (`child`, `graph` and
# what they import). Modules a run imports later (the program's own, real
# PyTorch) are imported in the child, as before.
PRELOAD = ("numpy", "tapelint_engine.child", "tapelint_engine.graph", "tapelint_engine.facade",
           "tapelint_engine.tape", "tapelint_engine.source", "tapelint_engine.errors")
_MESSAGE_CAP = 1 << 20
_DESCRIPTORS = 4  # reply socket, stdout, stderr, result pipe
_FORK_TIMEOUT_S = 60


def available() -> bool:
    """Fork servers need fork and pidfds (Linux 5.3 and later)."""
    return hasattr(os, "fork") and hasattr(os, "pidfd_open")


def kill_group(pid: int) -> None:
    """Kill the session led by `pid` and everything in it, if any of it is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class ServerLost(Exception):
    """The fork server ended (or refused a run) before it reported the child's end."""


class Forked:
    """One child forked by the server: its pid, and its exit status when the
    server reports it. Answers `wait` like `subprocess.Popen`."""

    def __init__(self, reply: socket.socket, pid: int) -> None:
        self.reply, self.pid = reply, pid
        self.returncode: Optional[int] = None

    def wait(self, timeout: Optional[float] = None) -> int:
        """The child's return code (`-signal` if a signal ended it); raises
        `subprocess.TimeoutExpired` after `timeout` seconds, `ServerLost`
        if the server ended first."""
        if self.returncode is not None:
            return self.returncode
        self.reply.settimeout(timeout)
        try:
            answer = _receive(self.reply)
        except TimeoutError:
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout or 0.0) from None
        if "returncode" not in answer:
            raise ServerLost("the fork server ended before the child did")
        self.returncode = int(answer["returncode"])
        self.reply.close()
        return self.returncode


class ForkServer:
    """The parent's end of one server (see the module docstring)."""

    def __init__(self, command_prefix: Sequence[str], env: Mapping[str, str]) -> None:
        self.owner = os.getpid()  # a forked copy of the parent must start its own
        self.lock = threading.Lock()
        self.home = tempfile.mkdtemp(prefix="tapelint-forkserver-")
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [*command_prefix, sys.executable, "-m", "tapelint_engine.forkserver", str(theirs.fileno())]
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, env={**env, "HOME": self.home,
                                                                             "TMPDIR": self.home},
                                            cwd=self.home, pass_fds=(theirs.fileno(),), start_new_session=True)
        except OSError:
            self.close()
            raise
        finally:
            theirs.close()

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def spawn(self, module: str, argv: Sequence[str], cwd: str, env: Mapping[str, str],
              stdout: int, stderr: int, result: int) -> Forked:
        """Fork a child running `module.main(argv)` with these descriptors as
        its stdout, stderr and result pipe (the caller closes its copies).
        Raises `ServerLost` if the server cannot start it."""
        reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = json.dumps({"module": module, "argv": list(argv), "cwd": cwd, "env": dict(env)}).encode()
        try:
            with self.lock:
                socket.send_fds(self.control, [request], [theirs.fileno(), stdout, stderr, result])
        except OSError as exc:
            reply.close()
            raise ServerLost(f"the fork server is gone ({exc})") from None
        finally:
            theirs.close()
        reply.settimeout(_FORK_TIMEOUT_S)
        try:
            answer = _receive(reply)
        except TimeoutError:
            answer = {"error": f"the fork server did not fork the child within {_FORK_TIMEOUT_S} s"}
        if "pid" not in answer:
            reply.close()
            raise ServerLost(answer.get("error", "the fork server ended before it forked the child"))
        return Forked(reply, int(answer["pid"]))

    def close(self) -> None:
        """Ends the server (it kills what it started) and removes its home."""
        self.control.close()
        process = getattr(self, "process", None)
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            if process.poll() is None:
                kill_group(process.pid)
                process.wait()
        with contextlib.suppress(OSError):
            os.rmdir(self.home)


_SERVERS: dict[tuple[str, ...], ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def server(command_prefix: Sequence[str], env: Mapping[str, str]) -> ForkServer:
    """This process's server started under `command_prefix` (`unshare …` or
    nothing), started on first use and again if it ended."""
    key = tuple(command_prefix)
    with _SERVERS_LOCK:
        current = _SERVERS.get(key)
        if current is None or not current.alive():
            if current is not None and current.owner == os.getpid():
                current.close()
            current = _SERVERS[key] = ForkServer(command_prefix, env)
        return current


@atexit.register
def _close_servers() -> None:
    with _SERVERS_LOCK:
        for current in _SERVERS.values():
            if current.owner == os.getpid():
                current.close()
        _SERVERS.clear()


def _receive(sock: socket.socket) -> dict[str, Any]:
    """One JSON message; `{}` when the other end closed (or sent garbage)."""
    try:
        data = sock.recv(_MESSAGE_CAP)
    except TimeoutError:
        raise
    except OSError:
        return {}
    try:
        message = json.loads(data) if data else {}
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


# --------------------------------------------------------------------- server


@dataclass(frozen=True)
class _Run:
    """One requested run, as the server received it."""

    module: str
    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str]
    reply: socket.socket
    stdout: int
    stderr: int
    result: int

    def close_child_ends(self) -> None:
        for fd in (self.stdout, self.stderr, self.result):
            os.close(fd)

    def execute(self) -> int:
        """In the forked child: become the run (`python -m module argv` in
        `cwd` with `env`) and return its exit status."""
        self.reply.close()  # the exit status is the server's to report
        os.setsid()  # its own session: the parent kills it and whatever it starts
        os.dup2(self.stdout, 1)
        os.dup2(self.stderr, 2)
        os.close(self.stdout)
        os.close(self.stderr)
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.env)
        os.environ["TAPELINT_RESULT_FD"] = str(self.result)
        tempfile.tempdir = None  # TMPDIR is read again
        sys.path[0] = self.cwd  # what `python -m` puts first
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        module = importlib.import_module(self.module)
        sys.argv = [module.__file__ or self.module, *self.argv]
        # What it raises ends this process as it would end `python -m module`
        # (SystemExit, or a traceback and exit 1): nothing of the server is left to run.
        status: int = module.main(list(self.argv))
        return status


def _parse(message: bytes, fds: list[int]) -> Optional[_Run]:
    """The run a message asks for; None (its descriptors closed) if malformed."""
    try:
        request = json.loads(message)
        run = _Run(str(request["module"]), tuple(map(str, request["argv"])), str(request["cwd"]),
                   {str(k): str(v) for k, v in request["env"].items()},
                   socket.socket(fileno=fds[0]), fds[1], fds[2], fds[3])
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OSError):
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        return None
    return run


def _send(reply: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the parent may have given up on this run
        reply.send(json.dumps(message).encode())


def serve(control: socket.socket) -> Optional[_Run]:
    """The server's loop. Returns None in the server when the parent's end
    closed (every child it started killed), and in each forked child its run."""
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    live: dict[int, tuple[int, socket.socket]] = {}  # by pidfd: the child's pid and its reply socket
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                try:
                    message, fds, _, _ = socket.recv_fds(control, _MESSAGE_CAP, _DESCRIPTORS)
                except OSError:
                    message, fds = b"", []
                if not message:
                    for pid, _reply in live.values():
                        kill_group(pid)
                    return None
                run = _parse(message, fds)
                if run is None:
                    continue
                try:
                    pid = os.fork()
                except OSError as exc:
                    run.close_child_ends()
                    _send(run.reply, {"error": f"could not fork the child: {exc}"})
                    run.reply.close()
                    continue
                if pid == 0:
                    selector.close()
                    control.close()
                    for pidfd, (_pid, reply) in live.items():
                        os.close(pidfd)
                        reply.close()
                    return run
                run.close_child_ends()
                pidfd = os.pidfd_open(pid)
                live[pidfd] = (pid, run.reply)
                selector.register(pidfd, selectors.EVENT_READ)
                _send(run.reply, {"pid": pid})
            else:
                pidfd = key.fd
                pid, reply = live.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _, status = os.waitpid(pid, 0)
                _send(reply, {"returncode": os.waitstatus_to_exitcode(status)})
                reply.close()


def preload(names: Sequence[str]) -> None:
    """Import `names`; one that fails is left to the child, which imports it
    again and reports the failure as a fresh interpreter would."""
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def main(argv: Sequence[str]) -> int:
    """`python -m tapelint_engine.forkserver FD`: serve the socket `FD`."""
    control = socket.socket(fileno=int(argv[0]))
    preload(PRELOAD)
    run = serve(control)
    return 0 if run is None else run.execute()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
