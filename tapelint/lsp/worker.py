"""The language server's lint process: one long-lived child that lints every
document, so that nothing a document does to the linter (a native abort in
libcst's parser, a recursion or memory blow-up, a file that takes minutes)
can take the server down.

The child stays warm between edits: its imports are done once, and
the parse cache of the project's other modules (`tapelint.analysis.project`)
lives in it, so a keystroke pays only the document's own lint, and of its
parse only the statements it touched (`tapelint.analysis.reparse`: the
document's tree is laid out after each reply). After each
reply (off the latency path) the heap is settled as between two files of
`check` (`runner.settle_heap`): otherwise the collector's full passes walk
every imported module and cached tree during the next lint. Each
document is linted as `tapelint check` lints a file in a worker: on a
thread with a deep stack, under the per-file budget (`file-timeout` CPU
seconds, `file-memory-mb` MB, enforced by the kernel), the child dying with
the server. When the child dies anyway, the document is reported in one
line (as the command line reports it) and a fresh child lints the next one.

Requests and replies travel as pickles over the child's stdin and stdout;
its own fd 1 points at its stderr, so nothing printed can corrupt them.

`TAPELINT_TEST_WORKER_FAULTS=1` (tests only) makes the child abort on a
document holding `ABORT_MARKER`, as a native crash would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import IO, Optional

from tapelint.analysis.project import CACHE as PARSED
from tapelint.diagnostics import FileError, FileResult
from tapelint.notebooks import lint_notebook
from tapelint.runner import Outcome, _budget, _death, _init_worker, _Task, _with_deep_stack, guarded, settle_heap
from tapelint.settings import Settings
from tapelint.suppressions import lint_module

FAULTS_VARIABLE = "TAPELINT_TEST_WORKER_FAULTS"
ABORT_MARKER = "# tapelint-test: abort the lint worker"
# Beyond the CPU budget (which the kernel enforces), how long a lint may
# take in wall time before the child is taken for stuck: a loaded machine
# gives a process a fraction of a core.
_WALL_FACTOR = 4.0
_WALL_GRACE_SECONDS = 10.0
_STDERR_TAIL = 4096


@dataclass(frozen=True)
class Request:
    """One document to lint: its text as the editor holds it."""

    text: str
    path: str
    settings: Settings
    notebook: bool  # `text` is the notebook's JSON (`tapelint.lsp.notebook.notebook_json`)


class LintWorker:
    """The parent's handle on the lint process. Not thread-safe: the server
    calls it from its one lint thread (which also keeps the child alive: on
    Linux the child dies with the thread that started it)."""

    def __init__(self) -> None:
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.requests: Optional[Connection] = None
        self.replies: Optional[Connection] = None
        self.stderr: Optional[IO[bytes]] = None  # a named temporary file
        self.started = 0  # how many children were started: one, plus one per death

    def start(self) -> None:
        """Start the child if none runs (also to warm it before the first document)."""
        if self.process is not None and self.process.poll() is None:
            return
        self.close()
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        # The child's stderr once it runs (a native abort's reason); before
        # that, an error starting it reaches the editor's log of the server.
        self.stderr = tempfile.NamedTemporaryFile(prefix="tapelint-lsp-worker-")  # noqa: SIM115 - lives as long as the child
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tapelint.lsp.worker", str(os.getpid()), self.stderr.name],
                stdin=request_read, stdout=reply_write,
            )
        finally:
            os.close(request_read)
            os.close(reply_write)
        self.requests = Connection(request_write, readable=False)
        self.replies = Connection(reply_read, writable=False)
        self.started += 1

    def lint(self, request: Request) -> Outcome:
        """The document's outcome; never raises for the document's sake."""
        self.start()
        assert self.requests is not None and self.replies is not None
        wall = request.settings.file_timeout * _WALL_FACTOR + _WALL_GRACE_SECONDS
        try:
            self.requests.send(request)
            if not self.replies.poll(wall):
                return self._restart(_stuck(request, wall))
            reply: Outcome = self.replies.recv()
            return reply
        except (EOFError, OSError):
            return self._restart(self._death(request))  # the child died: its exit says why

    def _death(self, request: Request) -> Outcome:
        """What the child's end says about the document it was linting."""
        assert self.process is not None and self.stderr is not None
        self.process.wait()
        self.stderr.seek(max(0, os.fstat(self.stderr.fileno()).st_size - _STDERR_TAIL))
        native = self.stderr.read().decode(errors="replace")
        return _death(_Task(request.path, request.settings), self.process.returncode, native)

    def _restart(self, outcome: Outcome) -> Outcome:
        """End the child (dead or stuck), start a fresh one for the next edit."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        self.close()
        self.start()
        return outcome

    def close(self) -> None:
        """End the child: closing its requests ends its loop."""
        for connection in (self.requests, self.replies):
            if connection is not None:
                connection.close()
        self.requests = self.replies = None
        if self.process is not None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None


def _stuck(request: Request, wall: float) -> Outcome:
    path = request.path
    message = (f"no answer from the lint process within {wall:g} s (wall clock; the CPU budget is"
               f" {request.settings.file_timeout:g} s, config `file-timeout`); not checked")
    return Outcome(FileResult(path, errors=(FileError(path, message),)))


# ------------------------------------------------------------------- the child


def lint_request(request: Request) -> Outcome:
    """In the child: one document under its budget, on the deep-stack thread."""
    with _budget(request.settings):
        return _with_deep_stack(_lint_text, request.path, request.settings, request)


def _lint_text(path: str, settings: Settings, request: Request) -> Outcome:
    if os.environ.get(FAULTS_VARIABLE) and ABORT_MARKER in request.text:
        os.abort()
    lint = lint_notebook if request.notebook else lint_module
    return guarded(path, settings, lambda: Outcome(lint(request.text, path, settings)))


def serve(parent: int, stderr_path: str) -> None:
    """Lint requests from stdin until the server closes it."""
    requests = Connection(os.dup(0), writable=False)
    replies = Connection(os.dup(1), readable=False)
    _init_worker(parent, stderr_path)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)  # a stray print lands on stderr, not in a reply
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return
        replies.send(lint_request(request))
        PARSED.prepare_reparse(request.path)  # (off the keystroke's path: the next edit reparses)
        settle_heap()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
