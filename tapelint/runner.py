"""Lint many files: in parallel across cores, results in discovery order.

Each task reads and lints one file in a worker process and sends back only
its small `FileResult`; the syntax tree dies with the task, and at most a few
tasks per worker are in flight, so memory stays flat however large the tree.

No file can take the run down. Files are always linted in worker processes
(one with `-j 1`), never in the process that reports. Each file is linted in
a thread with a large stack and a high recursion limit (libcst's native
parser overflows an 8 MB stack on a few thousand nested brackets and kills
the process); any exception becomes an `internal error` entry for that file;
a worker that dies anyway (a crash in native code) breaks the pool, and the
files that were in flight are then re-run one by one, each in a process of
its own, so only the culprit is reported and every other file is still
checked.

Each file has a budget (`Settings.file_timeout` CPU seconds and
`file_memory_mb` MB), enforced by the kernel so that it holds even inside
libcst's native parser: before each file the worker arms its CPU-time
interval timer (`ITIMER_PROF`) with the budget, so that SIGPROF, whose
default action ends the process, arrives once the file has used it (to the
kernel's tick: `RLIMIT_CPU` counts whole seconds and would let a 0.5 s
budget run for 1.5 s), and sets its `RLIMIT_AS` to its current size plus the
budget (an allocation past it fails: a `MemoryError`, or an abort in native
code). The
file that ends its process is then named in one line, not as a tapelint
crash. Workers die with the run: `PR_SET_PDEATHSIG` on Linux, a watchdog
thread polling the parent's pid elsewhere, so a killed `tapelint check`
leaves no worker behind.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import queue
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Optional

from tapelint import debug
from tapelint.analysis import reads
from tapelint.cache import Dependencies, ResultCache
from tapelint.diagnostics import FileError, FileResult
from tapelint.files import SourceError, decode_source, read_bytes, read_source
from tapelint.rules.across_files import without_callee_copies
from tapelint.settings import Settings

try:
    import resource
except ImportError:  # not on POSIX: no kernel-enforced budget
    resource = None  # type: ignore[assignment]

# Measured: 512 MiB of stack holds recursion 50,000 Python frames deep even
# through C calls; the memory is reserved, not used, until the recursion happens.
_STACK_BYTES = 512 * 1024 * 1024
_RECURSION_LIMIT = 50_000
# Tasks in flight per worker: enough to keep every core busy, few enough that
# finished-but-unread results never pile up.
_IN_FLIGHT_PER_WORKER = 4
# The CPU-time budget's timer, where the system has one (not on Windows).
_CPU_TIMER = getattr(signal, "ITIMER_PROF", None)
# Characters of source past which a file's tree is worth returning to the
# system when done (libcst holds ~600 bytes per source character).
_LARGE_FILE = 64 * 1024


@dataclass(frozen=True)
class Outcome:
    """One file's result; `crashed` when tapelint itself failed on it (exit 2);
    `dependencies` (when asked for) what the result was computed from, for the cache."""

    result: FileResult
    crashed: bool = False
    dependencies: Optional[Dependencies] = None


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


def lint_files(files: Sequence[str], settings: Settings | Sequence[Settings], jobs: int,
               cache: Optional[ResultCache] = None) -> RunResult:
    """Lint `files` with up to `jobs` worker processes; `settings` is one for
    all files or one per file (from their configuration), sent to the workers
    with each file. With `cache`, a file whose stored result still holds is
    not linted, and every new result is stored."""
    per_file = (settings,) * len(files) if isinstance(settings, Settings) else tuple(settings)
    if not files:
        return RunResult(())
    known: dict[int, Outcome] = {}
    if cache is not None:
        for index, path in enumerate(files):
            found = _cached(cache, path, per_file[index])
            if found is not None:
                known[index] = Outcome(found)
    todo = [index for index in range(len(files)) if index not in known]
    if todo:
        fresh = _in_workers([files[i] for i in todo], [per_file[i] for i in todo],
                            max(1, min(jobs, len(todo))), record=cache is not None)
        for index, outcome in zip(todo, fresh):
            known[index] = _stored(cache, files[index], per_file[index], outcome)
    outcomes = [known[index] for index in range(len(files))]
    results = without_callee_copies([outcome.result for outcome in outcomes])
    return RunResult(tuple(replace(outcome, result=result) for outcome, result in zip(outcomes, results)))


def _stored(cache: Optional[ResultCache], path: str, settings: Settings, outcome: Outcome) -> Outcome:
    """`outcome` kept in `cache` (when it says what it depends on), without its dependencies."""
    if cache is not None and outcome.dependencies is not None and not outcome.crashed:
        cache.store(path, settings, outcome.dependencies, outcome.result)
    return replace(outcome, dependencies=None)


def _cached(cache: ResultCache, path: str, settings: Settings) -> Optional[FileResult]:
    try:
        data = read_bytes(path)
    except SourceError:
        return None  # linting it reports why
    return cache.lookup(path, settings, data)


def lint_one(path: str, settings: Settings, cache: Optional[ResultCache] = None) -> Outcome:
    """Read and lint one file in this process; never raises (bar KeyboardInterrupt).
    With `cache`, a stored result that still holds is returned unlinted and a
    new one is stored: a long-lived process (the language server's worker)
    keeps one `ResultCache`, and its parse cache keeps imported modules parsed."""
    if cache is None:
        return _with_deep_stack(_read_and_lint, path, settings)
    found = _cached(cache, path, settings)
    if found is not None:
        return Outcome(found)
    return _stored(cache, path, settings, _with_deep_stack(_read_and_lint_recorded, path, settings))


def lint_text_contained(text: str, path: str, settings: Settings) -> Outcome:
    """Lint `text` as the file `path` in a process of its own, under the
    per-file budget: for a caller that must survive whatever the text does
    to the parser (standard input)."""
    return _run_alone(_Task(path, settings, text))


@dataclass(frozen=True)
class _Task:
    path: str
    settings: Settings
    text: Optional[str] = None  # None: read the file
    record: bool = False  # return the result's `Dependencies` (for the cache)


def _lint_task(task: _Task) -> Outcome:
    """In a worker: one file under its budget."""
    _DeepStackThread.get()  # its stack is the worker's, not the file's
    settle_heap()
    with _budget(task.settings):
        if task.record:
            return _with_deep_stack(_read_and_lint_recorded, task.path, task.settings)
        return _with_deep_stack(_read_and_lint, task.path, task.settings, task.text)


def _read_and_lint_recorded(path: str, settings: Settings) -> Outcome:
    """`_read_and_lint`, with what the result depends on: the digest of the
    bytes it linted and what its lint looked up on disk (`analysis.reads`)."""
    try:
        data = read_bytes(path)
    except SourceError as exc:
        return Outcome(FileResult(path, errors=(FileError(path, str(exc)),)))
    with reads.recording() as facts:
        outcome = _read_and_lint(path, settings, data=data)
    return replace(outcome, dependencies=Dependencies(reads.content_digest(data), tuple(sorted(facts.items()))))


def _read_and_lint(path: str, settings: Settings, text: Optional[str] = None, data: Optional[bytes] = None) -> Outcome:
    def lint() -> Outcome:
        try:
            if text is not None:
                source = text
            else:
                source = decode_source(data) if data is not None else read_source(path)
        except SourceError as exc:
            return Outcome(FileResult(path, errors=(FileError(path, str(exc)),)))
        result = _linter()(source, path, settings)
        if len(source) > _LARGE_FILE:
            _return_freed_heap()
        return Outcome(result)

    return guarded(path, settings, lint)


def _linter() -> Callable[[str, str, Settings], FileResult]:
    """`document.lint_document`, imported on first need: a run whose every
    result is cached never loads the linter (libcst, the analysis, the
    rules). The parent loads it before it forks workers, which inherit it."""
    from tapelint.document import lint_document

    return lint_document


def guarded(path: str, settings: Settings, lint: Callable[[], Outcome]) -> Outcome:
    """Run one file's lint so that nothing it does escapes: its warnings
    silenced (parsing user code can warn about invalid escapes: not ours to
    print), a MemoryError reported as the memory budget, any other exception
    as tapelint's internal error on this file (the others are still checked)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lint()
    except MemoryError:
        return Outcome(FileResult(path, errors=(FileError(path, _over_memory(settings)),)))
    except Exception as exc:  # a bug in tapelint
        return _crash(path, debug.internal_error(exc))


def settle_heap() -> None:
    """Between two files of a long-lived process: collect the reference
    cycles the last file left (nested functions that call themselves), then
    move every survivor (imported modules, the parse cache's trees) out of
    the cycle collector's sight. Otherwise each of its full collections
    walks the whole parse cache, hundreds of thousands of nodes: measured on
    peft in one process, 7 of 27 CPU-seconds. What survives a file is
    acyclic (trees, summaries), so reference counting still frees it when
    the parse cache drops it."""
    gc.collect()
    gc.freeze()


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


def _over_time(settings: Settings) -> str:
    return (f"took more than {settings.file_timeout:g} s of CPU time, the per-file budget"
            " (config `file-timeout`, flag `--file-timeout`); not checked")


def _over_memory(settings: Settings) -> str:
    return (f"needed more than {settings.file_memory_mb} MB, the per-file memory budget"
            " (config `file-memory-mb`, flag `--file-memory-mb`); not checked")


@contextmanager
def _budget(settings: Settings) -> Iterator[None]:
    """The kernel's limits for one file (see the module docstring), restored after it."""
    saved: list[tuple[int, tuple[int, int]]] = []
    if resource is not None:
        size = _address_space()
        if size is not None:
            _lower(resource.RLIMIT_AS, size + settings.file_memory_mb * 2**20, saved)
    timed = _CPU_TIMER is not None and signal.getsignal(signal.SIGPROF) == signal.SIG_DFL
    if timed:
        signal.setitimer(signal.ITIMER_PROF, settings.file_timeout)
    try:
        yield
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_PROF, 0)
        for kind, limits in reversed(saved):
            resource.setrlimit(kind, limits)


def _lower(kind: int, value: int, saved: list[tuple[int, tuple[int, int]]]) -> None:
    """Set the soft limit `kind` to `value` (within the hard one), noting the old limits in `saved`."""
    soft, hard = resource.getrlimit(kind)
    try:
        resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
    except (ValueError, OSError):
        return
    saved.append((kind, (soft, hard)))


def _address_space() -> Optional[int]:
    """This process's virtual size in bytes (Linux only: elsewhere RLIMIT_AS
    is either not enforced or not comparable)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _with_deep_stack(function: Callable[..., Outcome], path: str, settings: Settings, *more: object) -> Outcome:
    """Run `function` on the process's deep-stack thread (or here, when
    there is no room for its stack)."""
    server = _DeepStackThread.get()
    if server is None:
        return function(path, settings, *more)
    return server.run(function, path, settings, *more)


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

    def run(self, function: Callable[..., Outcome], path: str, settings: Settings, *more: object) -> Outcome:
        done = threading.Event()
        box: list[Outcome] = []
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, _RECURSION_LIMIT))
        try:
            self.tasks.put((function, (path, settings, *more), box, done))
            done.wait()
        finally:
            sys.setrecursionlimit(previous_limit)
        if not box:
            return _crash(path, "the lint thread ended without a result")
        from tapelint.lint import TOO_DEEP  # loaded by the lint that just ran

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
            function, arguments, box, done = task
            try:
                box.append(function(*arguments))
            except BaseException as exc:  # keep serving: the caller reports this file
                box.append(_crash(arguments[0], debug.internal_error(exc)))
            finally:
                done.set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_DeepStackThread.forget)


# --- worker processes ---------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_WATCHDOG_SECONDS = 0.5


def _init_worker(parent: int, stderr_path: Optional[str] = None) -> None:
    # The parent handles Ctrl-C and shuts the pool down; workers stay quiet.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    if resource is not None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    # A native abort prints its reason ("memory allocation of N bytes
    # failed") on file descriptor 2: to a file the parent reads, or nowhere.
    target = os.open(stderr_path or os.devnull, os.O_WRONLY | os.O_APPEND)
    os.dup2(target, 2)
    os.close(target)


def _init_run_worker(parent: int) -> None:
    """A worker of one run's pool, which ends with the run: one view of the disk."""
    _init_worker(parent)
    reads.one_view_per_process()


def _die_with(parent: int) -> None:
    """End this process when `parent` ends, whatever ends it (SIGKILL included)."""
    if sys.platform.startswith("linux"):
        try:
            if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) == 0:
                if os.getppid() != parent:  # the parent died before the prctl
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_WATCHDOG_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _in_workers(files: Sequence[str], settings: Sequence[Settings], jobs: int,
                record: bool = False) -> tuple[Outcome, ...]:
    _linter()  # once here, not once per forked worker
    outcomes: dict[int, Outcome] = {}
    # Largest first: the long tasks do not end up last on one core, and the
    # largest trees meet a worker's heap before other files have fragmented it.
    pending = deque(sorted(range(len(files)), key=lambda index: -_size(files[index])))
    while pending:
        suspects = _run_pool(files, pending, settings, jobs, outcomes, record)
        # The pool broke: one of the suspects killed its worker. Run each alone.
        for index in suspects:
            outcomes[index] = _run_alone(_Task(files[index], settings[index], record=record))
    return tuple(outcomes[index] for index in range(len(files)))


def _run_alone(task: _Task) -> Outcome:
    """`task` in a process of its own; if the process dies, its exit says why."""
    _linter()
    context = multiprocessing.get_context()
    receiver, sender = context.Pipe(duplex=False)
    with tempfile.NamedTemporaryFile(prefix="tapelint-stderr-") as stderr:
        process = context.Process(target=_alone, args=(sender, task, os.getpid(), stderr.name), daemon=True)
        process.start()
        sender.close()
        try:
            outcome: Optional[Outcome] = receiver.recv()
        except (EOFError, OSError):
            outcome = None
        finally:
            receiver.close()
            process.join(timeout=None if outcome is None else 5)
            if process.is_alive():
                process.kill()
                process.join()
        if outcome is not None:
            return outcome
        native = stderr.read(4096).decode(errors="replace")
    return _death(task, process.exitcode, native)


def _alone(sender: multiprocessing.connection.Connection, task: _Task, parent: int, stderr_path: str) -> None:
    _init_worker(parent, stderr_path)
    sender.send(_lint_task(task))
    sender.close()


def _death(task: _Task, exitcode: Optional[int], native_stderr: str) -> Outcome:
    """The outcome of a file whose checking process ended without a result."""
    path, settings = task.path, task.settings
    if _CPU_TIMER is not None and exitcode == -signal.SIGPROF:
        return Outcome(FileResult(path, errors=(FileError(path, _over_time(settings)),)))
    if "memory allocation of" in native_stderr:  # the abort message of libcst's native (Rust) parser
        return Outcome(FileResult(path, errors=(FileError(path, _over_memory(settings)),)))
    return _crash(path, "the worker process died while checking this file")


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it will say what is wrong


def _run_pool(
    files: Sequence[str], pending: deque[int], settings: Sequence[Settings], jobs: int, outcomes: dict[int, Outcome],
    record: bool = False,
) -> list[int]:
    """Lint `pending` (consumed) into `outcomes`; if the pool breaks, return
    the indexes that were in flight, whose outcome is unknown."""
    in_flight: dict[Future[Outcome], int] = {}
    executor = ProcessPoolExecutor(max_workers=jobs, initializer=_init_run_worker, initargs=(os.getpid(),))
    try:
        while pending or in_flight:
            while pending and len(in_flight) < jobs * _IN_FLIGHT_PER_WORKER:
                index = pending.popleft()
                try:
                    in_flight[executor.submit(_lint_task, _Task(files[index], settings[index], record=record))] = index
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
