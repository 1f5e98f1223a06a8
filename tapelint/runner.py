"""Lint many files: in parallel across cores, results in discovery order.

Each task reads and lints one file in a worker process and sends back only
its small `FileResult`; the syntax tree dies with the task, and at most a few
tasks per worker are in flight, so memory stays flat however large the tree.

No file can take the run down. Each file is linted in a thread with a large
stack and a high recursion limit (libcst's native parser overflows an 8 MB
stack on a few thousand nested brackets and kills the process); any
exception becomes an `internal error` entry for that file; a worker that dies
anyway (a crash in native code) breaks the pool, and the files that were in
flight are then re-run one by one in a fresh pool, so only the culprit is
reported and every other file is still checked.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import sys
import threading
import warnings
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from tapelint import debug
from tapelint.diagnostics import FileError, FileResult
from tapelint.document import lint_document
from tapelint.files import SourceError, read_source
from tapelint.lint import TOO_DEEP
from tapelint.settings import Settings

# Measured: 512 MiB of stack holds recursion 50,000 Python frames deep even
# through C calls; the memory is reserved, not used, until the recursion happens.
_STACK_BYTES = 512 * 1024 * 1024
_RECURSION_LIMIT = 50_000
# Tasks in flight per worker: enough to keep every core busy, few enough that
# finished-but-unread results never pile up.
_IN_FLIGHT_PER_WORKER = 4
# Characters of source past which a file's tree is worth returning to the
# system when done (libcst holds ~600 bytes per source character).
_LARGE_FILE = 64 * 1024


@dataclass(frozen=True)
class Outcome:
    """One file's result; `crashed` when tapelint itself failed on it (exit 2)."""

    result: FileResult
    crashed: bool = False


@dataclass(frozen=True)
class RunResult:
    outcomes: tuple[Outcome, ...]  # in the order the files were given

    @property
    def results(self) -> tuple[FileResult, ...]:
        return tuple(outcome.result for outcome in self.outcomes)

    @property
    def crashed(self) -> bool:
        return any(outcome.crashed for outcome in self.outcomes)


def default_jobs() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def lint_files(files: Sequence[str], settings: Settings | Sequence[Settings], jobs: int) -> RunResult:
    """Lint `files` with up to `jobs` processes (in this process when 1);
    `settings` is one for all files or one per file (from their configuration),
    sent to the workers with each file."""
    per_file = (settings,) * len(files) if isinstance(settings, Settings) else tuple(settings)
    jobs = min(jobs, len(files))
    if jobs <= 1:
        return RunResult(tuple(lint_one(path, file_settings) for path, file_settings in zip(files, per_file)))
    return RunResult(_parallel(files, per_file, jobs))


def lint_one(path: str, settings: Settings) -> Outcome:
    """Read and lint one file; never raises (bar KeyboardInterrupt)."""
    return _with_deep_stack(_read_and_lint, path, settings)


def _read_and_lint(path: str, settings: Settings) -> Outcome:
    try:
        with warnings.catch_warnings():
            # Parsing user code can warn (invalid escape sequences): not ours to print.
            warnings.simplefilter("ignore")
            try:
                source = read_source(path)
            except SourceError as exc:
                return Outcome(FileResult(path, errors=(FileError(path, str(exc)),)))
            result = lint_document(source, path, settings)
            if len(source) > _LARGE_FILE:
                _return_freed_heap()
            return Outcome(result)
    except MemoryError:
        return Outcome(FileResult(path, errors=(FileError(path, "out of memory while checking this file"),)))
    except Exception as exc:  # a bug in tapelint: report it on this file, check the others
        return _crash(path, debug.internal_error(exc))


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load_malloc_trim()


def _return_freed_heap() -> None:
    """A large file's syntax tree is freed when its lint ends (the analysis
    leaves no reference cycles), but the C heap keeps the pages; handing
    them back keeps the next large file from peaking on top of them."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _crash(path: str, detail: str) -> Outcome:
    first_line = (detail.strip().splitlines() or [""])[0][:300]
    return Outcome(FileResult(path, errors=(FileError(path, f"internal error: {first_line}"),)), crashed=True)


def _with_deep_stack(function: Callable[[str, Settings], Outcome], path: str, settings: Settings) -> Outcome:
    """Run `function` on the process's deep-stack thread (or here, when
    there is no room for its stack)."""
    server = _DeepStackThread.get()
    if server is None:
        return function(path, settings)
    return server.run(function, path, settings)


class _DeepStackThread:
    """One daemon thread per process with a large stack, reused for every
    file: a fresh thread per file faults its stack in again on every parse
    (measured: 10% of the lint time on torch's analysed files). Daemon:
    Ctrl-C must not wait for a file that takes long to parse. A file that hit
    the recursion limit used the stack deeply; its thread is retired so the
    pages it touched are not kept for the rest of the run."""

    _current: Optional[_DeepStackThread] = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()

    @classmethod
    def forget(cls) -> None:
        """In a forked child: the parent's thread (and perhaps a held lock)
        did not come along."""
        cls._current = None
        cls._lock = threading.Lock()

    @classmethod
    def get(cls) -> Optional[_DeepStackThread]:
        with cls._lock:
            current = cls._current
            if current is None:
                current = cls._current = cls()
                previous_stack = threading.stack_size(_STACK_BYTES)
                try:
                    threading.Thread(target=current._serve, daemon=True).start()
                except RuntimeError:  # no room for the big stack (ulimit -v)
                    cls._current = None
                    return None
                finally:
                    threading.stack_size(previous_stack)
            return current

    def run(self, function: Callable[[str, Settings], Outcome], path: str, settings: Settings) -> Outcome:
        done = threading.Event()
        box: list[Outcome] = []
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, _RECURSION_LIMIT))
        try:
            self.tasks.put((function, path, settings, box, done))
            done.wait()
        finally:
            sys.setrecursionlimit(previous_limit)
        if not box:
            return _crash(path, "the lint thread ended without a result")
        if any(error.message.startswith(TOO_DEEP) for error in box[0].result.errors):
            self.retire()
        return box[0]

    def retire(self) -> None:
        with self._lock:
            if _DeepStackThread._current is self:
                _DeepStackThread._current = None
        self.tasks.put(None)

    def _serve(self) -> None:
        while True:
            task = self.tasks.get()
            if task is None:
                return
            function, path, settings, box, done = task
            try:
                box.append(function(path, settings))
            except BaseException as exc:  # keep serving: the caller reports this file
                box.append(_crash(path, debug.internal_error(exc)))
            finally:
                done.set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_DeepStackThread.forget)


# --- worker processes ---------------------------------------------------------

def _init_worker() -> None:
    # The parent handles Ctrl-C and shuts the pool down; workers stay quiet.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parallel(files: Sequence[str], settings: Sequence[Settings], jobs: int) -> tuple[Outcome, ...]:
    outcomes: dict[int, Outcome] = {}
    # Largest first: the long tasks do not end up last on one core, and the
    # largest trees meet a worker's heap before other files have fragmented it.
    pending = deque(sorted(range(len(files)), key=lambda index: -_size(files[index])))
    while pending:
        suspects = _run_pool(files, pending, settings, jobs, outcomes)
        # The pool broke: one of the suspects killed its worker. Run each alone.
        for index in suspects:
            if not _run_pool(files, deque([index]), settings, 1, outcomes):
                continue
            outcomes[index] = _crash(files[index], "the worker process died while checking this file")
    return tuple(outcomes[index] for index in range(len(files)))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it will say what is wrong


def _run_pool(
    files: Sequence[str], pending: deque[int], settings: Sequence[Settings], jobs: int, outcomes: dict[int, Outcome]
) -> list[int]:
    """Lint `pending` (consumed) into `outcomes`; if the pool breaks, return
    the indexes that were in flight, whose outcome is unknown."""
    in_flight: dict[Future[Outcome], int] = {}
    executor = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker)
    try:
        while pending or in_flight:
            while pending and len(in_flight) < jobs * _IN_FLIGHT_PER_WORKER:
                index = pending.popleft()
                try:
                    in_flight[executor.submit(lint_one, files[index], settings[index])] = index
                except BrokenProcessPool:
                    return [index, *in_flight.values()]
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                index = in_flight.pop(future)
                try:
                    outcomes[index] = future.result()
                except BrokenProcessPool:
                    return [index, *in_flight.values()]
                except Exception as exc:  # the result could not travel back
                    outcomes[index] = _crash(files[index], debug.internal_error(exc))
        return []
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
