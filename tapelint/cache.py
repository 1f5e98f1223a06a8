"""The result cache, like ruff's: a second run over unchanged files reads
their results instead of linting them again.

One entry per checked file, named by what the result depends on besides
the file's content — tapelint's version and code, the Python and libcst
that judged and parsed it, the file's settings, its
path (as given, and the working directory it is relative to) — and holding
the content digest it was computed from, the file-system facts its lint
relied on (`analysis.reads`: each first-party module it read, with its
digest, and each path an import resolution found missing, a directory or a
file), and the result. An entry is used only while the content digest and
every fact still hold, so editing a module invalidates exactly the files
whose lint read it (its importers, transitively as the project resolved
them), and nothing else.

Robust by construction: an entry is written to a temporary file and renamed
into place (concurrent runs sharing a directory see a whole entry or none);
anything unreadable, truncated, of another version or not matching its key
is a miss, and is rewritten after the file is linted. Results with an error
(unreadable file, budget exceeded, internal error) are never stored: they
may not happen next time. JSON, not pickle: a cache shared between CI jobs
must not be a way to run code.

Where (ruff's order): `--cache-dir`, `TAPELINT_CACHE_DIR`, `cache-dir` in
the configuration, else `.tapelint_cache` in the project root (the
directory of the configuration that applies to the current directory, else
the current directory). The directory gets a `.gitignore` of `*`.
`tapelint clean` removes it; `--no-cache` (or `TAPELINT_NO_CACHE=1`)
neither reads nor writes it.

For a long-lived process (the language server's worker): keep one
`ResultCache` and pass it to `runner.lint_one` (or `runner.lint_files`),
calling `forget_disk` when files may have changed; the per-process parse
cache (`analysis.project.CACHE`) keeps imported modules parsed, with their
summaries, between lints.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import types
import typing
from collections.abc import Mapping
from contextlib import suppress
from functools import cache, lru_cache
from typing import Any, Optional, Union

from tapelint import __version__
from tapelint.analysis import reads
from tapelint.diagnostics import FileResult
from tapelint.settings import Settings

if typing.TYPE_CHECKING:
    from tapelint.config import Resolver

CACHE_DIR_ENV = "TAPELINT_CACHE_DIR"
NO_CACHE_ENV = "TAPELINT_NO_CACHE"  # set (not "0"): as --no-cache
DEFAULT_CACHE_DIR = ".tapelint_cache"
_FORMAT = 1  # the entry layout; bumped when it changes
_FINGERPRINT_CHARS = 16


@dataclasses.dataclass(frozen=True)
class Dependencies:
    """What a result was computed from besides its settings: the digest of
    the file's bytes and the file-system facts its lint relied on."""

    digest: str
    facts: tuple[tuple[str, str], ...]


# ----------------------------------------------------------------- the codec


def encode(value: Any) -> Any:
    """Frozen dataclasses of plain data to JSON values (enums by value, tuples as lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list, frozenset, set)):
        items = [encode(v) for v in value]
        return sorted(items) if isinstance(value, (frozenset, set)) else items
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def decode(kind: Any, value: Any) -> Any:
    """The inverse of `encode`, guided by the type annotation `kind`. Raises
    `ValueError`/`TypeError`/`KeyError` on data that does not fit it."""
    origin = typing.get_origin(kind)
    if origin in _UNIONS:
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        return decode(next(o for o in options if o is not type(None)), value)
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in _list(value))
        items = _list(value)
        if len(items) != len(args):
            raise ValueError("tuple of the wrong length")
        return tuple(decode(a, v) for a, v in zip(args, items))
    if origin is frozenset:
        return frozenset(decode(typing.get_args(kind)[0], v) for v in _list(value))
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise TypeError("an object was expected")
        hints = _hints(kind)
        return kind(**{f.name: decode(hints[f.name], value[f.name]) for f in dataclasses.fields(kind) if f.init})
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(value)
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind in (str, int, bool) and type(value) is kind:
        return value
    raise TypeError(f"{value!r} is no {kind}")


# `Optional[X]` is a `Union`, `X | None` a `types.UnionType`.
_UNIONS = (Union, types.UnionType)


def _facts(value: Any) -> list[tuple[str, str]]:
    """An entry's facts, `[[path, state], ...]`: `decode(Dependencies.facts)`
    without its generic walk, which cost a warm run more than its reads."""
    pairs = _list(value)
    if not all(type(pair) is list and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is str
               for pair in pairs):
        raise TypeError("a fact is a [path, state] pair of strings")
    return [(path, state) for path, state in pairs]


def _list(value: Any) -> list:
    if not isinstance(value, list):
        raise TypeError("a list was expected")
    return value


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind, vars(sys.modules[kind.__module__]))


# ----------------------------------------------------------------- keys


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """tapelint's version and a digest of its own code, and the versions of
    the Python whose `compile()` judges syntax (TL900: a cache shared by CI
    jobs on 3.11 and 3.12 must not share their verdicts) and of libcst,
    which parses and places every node: a result computed by other code is
    never reused, released or not."""
    package = os.path.dirname(os.path.abspath(__file__))
    judges = f"{sys.implementation.name} {sys.version}/libcst {_libcst_version()}"
    digest = hashlib.blake2b(f"{__version__}/{_FORMAT}/{judges}".encode(), digest_size=16)
    for directory, folders, names in os.walk(package):
        folders[:] = sorted(d for d in folders if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith(".py")):
            path = os.path.join(directory, name)
            digest.update(os.path.relpath(path, package).encode())
            with open(path, "rb") as handle:
                digest.update(reads.content_digest(handle.read()).encode())
    return digest.hexdigest()


def _libcst_version() -> str:
    """From its metadata: importing libcst costs a warm run a tenth of a second."""
    try:
        return importlib.metadata.version("libcst")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def settings_key(settings: Settings) -> str:
    """Every setting, canonically: all of them can change a file's result."""
    # Imports resolve from the working directory when no project root is set (`project.roots_for`).
    return _settings_key(settings, "" if settings.project_root else os.getcwd())


@lru_cache(maxsize=256)
def _settings_key(settings: Settings, cwd: str) -> str:
    fields = encode(settings)
    if cwd:
        fields["cwd"] = cwd
    return json.dumps(fields, sort_keys=True)


# ----------------------------------------------------------------- the cache


class ResultCache:
    """Cached results in `directory`; one instance per run or per long-lived
    process (it memoises what it found on disk about the dependencies it
    checked: call `forget_disk` when files may have changed since)."""

    def __init__(self, directory: str) -> None:
        self.directory = os.path.abspath(directory)
        self.entries = os.path.join(self.directory, fingerprint()[:_FINGERPRINT_CHARS])
        self.disk: dict[tuple[str, bool], str] = {}
        self._prepared = False

    def forget_disk(self) -> None:
        self.disk.clear()

    def lookup(self, path: str, settings: Settings, data: bytes) -> Optional[FileResult]:
        """The stored result of linting `data` (the bytes of `path`) with
        `settings`, if every fact it relied on still holds; None otherwise."""
        try:
            with open(self._entry_path(path, settings), encoding="utf-8") as handle:
                entry = json.load(handle)
            if (not isinstance(entry, dict) or entry.get("fingerprint") != fingerprint()
                    or entry.get("path") != _where(path) or entry.get("settings") != settings_key(settings)
                    or entry.get("digest") != reads.content_digest(data)):
                return None
            if not reads.still_hold(_facts(entry["facts"]), self.disk):
                return None
            return decode(FileResult, entry["result"])
        except (OSError, ValueError, TypeError, KeyError, StopIteration, RecursionError):
            return None  # missing, truncated, corrupt, foreign: a miss, rewritten after the lint

    def store(self, path: str, settings: Settings, dependencies: Dependencies, result: FileResult) -> None:
        """Keep `result` for the next run; never raises (a cache that cannot
        be written only makes the next run slower)."""
        if result.errors:
            return
        entry = {
            "fingerprint": fingerprint(),
            "path": _where(path),
            "settings": settings_key(settings),
            "digest": dependencies.digest,
            "facts": encode(dependencies.facts),
            "result": encode(result),
        }
        try:
            self._prepare()
            _write_atomically(self._entry_path(path, settings), json.dumps(entry, separators=(",", ":")))
        except (OSError, TypeError, ValueError):
            return

    def _entry_path(self, path: str, settings: Settings) -> str:
        key = hashlib.blake2b("\0".join((*_where(path), settings_key(settings))).encode(), digest_size=16)
        return os.path.join(self.entries, key.hexdigest() + ".json")

    def _prepare(self) -> None:
        if self._prepared:
            return
        os.makedirs(self.entries, exist_ok=True)
        ignore = os.path.join(self.directory, ".gitignore")
        if not os.path.exists(ignore):
            _write_atomically(ignore, "# Automatically created by tapelint.\n*\n")
        self._prepared = True


def _where(path: str) -> list[str]:
    """The file, and the path as given with the directory it is relative to:
    a result names its files as they were given (`train.py` from the project,
    `proj/train.py` from above it), so each spelling has its own entry."""
    return [os.path.abspath(path), path, os.getcwd()]


def _write_atomically(path: str, text: str) -> None:
    """A whole file or none: written beside its place, then renamed over it."""
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


# ----------------------------------------------------------------- where


def cache_directory(flag: Optional[str], configured: Optional[str], project_root: str,
                    environ: Mapping[str, str] = os.environ) -> str:
    """`--cache-dir`, else `TAPELINT_CACHE_DIR`, else the configured
    `cache-dir` (absolute), else `.tapelint_cache` in `project_root` (the
    current directory when empty)."""
    chosen = flag or environ.get(CACHE_DIR_ENV) or configured
    return os.path.abspath(chosen or os.path.join(project_root or os.curdir, DEFAULT_CACHE_DIR))


def disabled(no_cache_flag: bool, environ: Mapping[str, str] = os.environ) -> bool:
    return no_cache_flag or environ.get(NO_CACHE_ENV, "") not in ("", "0")


def run_cache_directory(flag: Optional[str], resolver: Resolver) -> str:
    """The cache directory of a run started here: the configuration that
    applies to the current directory gives `cache-dir` and the project root."""
    config = resolver.config_for(os.path.join(os.curdir, "-"))
    return cache_directory(flag, config.cache_dir, config.root if config.path else "")


def clean(directory: str) -> bool:
    """Remove the cache directory; False when there was none. Refuses a
    directory that does not look like a tapelint cache (no `.gitignore` we
    wrote), so a mistyped `--cache-dir` never deletes a user's folder."""
    if not os.path.isdir(directory):
        return False
    if not _is_cache(directory):
        raise OSError(f"{directory} does not look like a tapelint cache (no .gitignore written by tapelint);"
                      " not removed")
    shutil.rmtree(directory)
    return True


def _is_cache(directory: str) -> bool:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8") as handle:
            return handle.read().startswith("# Automatically created by tapelint.")
    except OSError:
        return False
