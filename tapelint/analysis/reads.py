"""What one file's lint learnt from the file system besides the file itself:
which paths were files, directories or missing when imports were resolved,
and the content of every other file it read (an imported module, a module
the pre-check scanned for markers).

These facts are what a result depends on beyond its own text and settings,
so the cache (`tapelint.cache`) stores them with the result and reuses the
result only while every one still holds: editing an imported module, adding
a file that an import would now resolve to, or deleting one, invalidates
exactly the importers that looked at it. Recording is on only inside
`recording()`; each process lints one file at a time, so one active record
per process is enough.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Optional, TypeVar

_T = TypeVar("_T")

MISSING = "missing"
DIRECTORY = "dir"
FILE = "file"  # a file whose content was not read, only its existence used


def content_digest(data: bytes) -> str:
    """The key of a file's content (not a security boundary: 128 bits of blake2b)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_active: list[dict[str, str]] = []


@contextmanager
def recording() -> Iterator[dict[str, str]]:
    """Collect, into the yielded dict (path -> state or content digest), what
    the code run inside looks up on disk; an enclosing recording gets the
    same facts."""
    facts: dict[str, str] = {}
    _active.append(facts)
    try:
        yield facts
    finally:
        _active.remove(facts)
        replay(facts.items())


def replay(facts: Iterable[tuple[str, str]]) -> None:
    """Note again facts recorded earlier (by a cached computation that relied on them)."""
    if _active:
        for path, state in facts:
            _note(path, state)


def _note(path: str, state: str) -> None:
    if not _active:
        return
    facts = _active[-1]
    if state == FILE and facts.get(path, FILE) != FILE:
        return  # its content digest says more than its existence
    facts[path] = state


class _View(threading.local):
    states: Optional[dict[str, str]] = None  # path -> its state, inside `one_view()`


_view = _View()
# In a worker of one run (`runner`), the views of every file it lints are one:
# the disk as the run first found it (a module imported by many files is
# looked up once per worker, not once per file). None elsewhere (the
# language server's worker): each lint looks again.
_run_states: Optional[dict[str, str]] = None


def one_view_per_process() -> None:
    """Make every later `one_view()` of this process one view: for a process
    that lints the files of one run and ends with it. What a lint notes is
    still what it relied on, so a cached result that a change during the run
    made stale is linted again by the next run."""
    global _run_states
    _run_states = {}


def one_view_for_the_run() -> bool:
    """Does this process keep one view of the disk for its whole run
    (`one_view_per_process`)? What is computed from the disk may then be
    kept for the run, its facts noted again (`replay`) for each lint."""
    return _run_states is not None


def for_the_run(kept: dict[Hashable, tuple[_T, tuple[tuple[str, str], ...]]], key: Hashable,
                compute: Callable[[], _T], most: int) -> _T:
    """`compute()`, kept in `kept` under `key` for the rest of the run when
    this process keeps one view of the disk for it (`one_view_for_the_run`):
    a later lint then gets the answer with the facts it rested on noted
    again (`replay`). `kept` holds at most `most` answers."""
    run_wide = one_view_for_the_run()
    known = kept.get(key) if run_wide else None
    if known is not None:
        replay(known[1])
        return known[0]
    with recording() as facts:
        value = compute()
    if run_wide:
        if len(kept) >= most:
            kept.clear()
        kept[key] = (value, tuple(facts.items()))
    return value


@contextmanager
def one_view() -> Iterator[None]:
    """Inside, `path_state` stats each path once: one module's analysis asks
    the same questions of the same folders at every lookup through a package
    (`Program.definition`: 150,000 stats on detectron2), and one file's lint
    (`lint.lint_source`: its pre-check, thin and whole analyses) resolves
    the same imports up to three times. Its answers are one view of the
    disk; a later lint (an editor's next keystroke) looks again. Per thread:
    a thread's view is its own lint's."""
    outer = _view.states
    if outer is None:
        _view.states = {} if _run_states is None else _run_states
    try:
        yield
    finally:
        _view.states = outer


def path_state(path: str) -> str:
    """`FILE`, `DIRECTORY` or `MISSING` (what `os.path.isfile/isdir` would
    say), noted as a fact the current lint relies on."""
    states = _view.states
    if states is None:
        state = _stat_state(path)
    else:
        state = states.get(path) or states.setdefault(path, _stat_state(path))
    _note(path, state)
    return state


def is_file(path: str) -> bool:
    return path_state(path) == FILE


def is_dir(path: str) -> bool:
    return path_state(path) == DIRECTORY


def note_content(path: str, digest: str) -> None:
    """The current lint used the content of `path`, whose digest is `digest`."""
    _note(path, digest)


def _stat_state(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return MISSING
    if stat.S_ISDIR(mode):
        return DIRECTORY
    return FILE if stat.S_ISREG(mode) else MISSING


def current_state(path: str, recorded: str, seen: Optional[dict[tuple[str, bool], str]] = None) -> str:
    """What `path` is now, in the terms `recorded` was noted in (a digest
    when a digest was recorded). `seen` memoises the answers over one run,
    where many files depend on the same modules and look up the same paths."""
    wants_digest = recorded not in (FILE, MISSING, DIRECTORY)
    if seen is not None and (path, wants_digest) in seen:
        return seen[(path, wants_digest)]
    state = _stat_state(path)
    if state == FILE and wants_digest:
        try:
            with open(path, "rb") as handle:
                state = content_digest(handle.read())
        except OSError:
            state = MISSING
    if seen is not None:
        seen[(path, wants_digest)] = state
    return state


def still_hold(facts: Iterable[tuple[str, str]], seen: Optional[dict[tuple[str, bool], str]] = None) -> bool:
    """Every recorded fact (path, state) is still true on disk."""
    return all(current_state(path, state, seen) == state for path, state in facts)
