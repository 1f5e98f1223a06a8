"""Which files a run checks, and how their bytes become text.

Discovery walks directories recursively in sorted order, keeps `*.py` files
and Jupyter notebooks (`*.ipynb`),
and skips what is never the user's own code: version-control folders,
virtualenvs, caches and build output. The built-in skip list is ruff's
default `exclude` (plus `__pycache__` and any folder holding a `pyvenv.cfg`,
i.e. a virtualenv under any name); the walk adds `build/`
(`config.DEFAULT_SKIPPED_DIRECTORIES`). `env/` is *not* skipped: it is a
common name for a real package (an RL `env/` package). The built-in list applies only to what the walk
finds, never to a path named on the command line, so
`tapelint check .venv/lib/python3.11/site-packages/torch` works. The user's
`--exclude` globs apply to everything, named paths included.

Paths are reported as given: `tapelint check src` yields `src/a.py`,
`tapelint check .` yields `a.py`.

Reading follows PEP 263 (BOM, coding cookie, UTF-8 by default) through
`tokenize.detect_encoding`, and turns every way a file can fail (vanished,
unreadable, binary, undecodable, not a regular file) into a one-line
`FileError` message. Only regular files are read: a FIFO would block the run
forever and a link to `/dev/zero` would fill the memory, so the file is
opened without blocking and its type checked before any byte is read.
A symlink loop is one error on its entry; the rest of the tree is checked.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tapelint.diagnostics import FileError

# ruff's default `exclude`, plus `__pycache__`.
SKIPPED_DIRECTORIES: frozenset[str] = frozenset(
    [".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
     ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
     "__pycache__", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv"]
)

VIRTUALENV_MARKER = "pyvenv.cfg"
# Modules and Jupyter notebooks (see `tapelint.notebooks`).
SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Discovery:
    """The files to check, in order, and the paths that could not be listed
    (a named path that does not exist, a directory that cannot be read)."""

    files: tuple[str, ...]
    errors: tuple[FileError, ...] = ()


@dataclass(frozen=True)
class Excluder:
    """`--exclude` globs, matched like ruff: a glob without `/` against each
    path component's name (`legacy`, `test_*.py`), a glob with `/` against the
    whole path, relative to the current directory or absolute (`tests/data/*`)."""

    globs: tuple[str, ...] = ()

    def excludes(self, path: str) -> bool:
        if not self.globs:
            return False
        relative = os.path.normpath(path).replace(os.sep, "/")
        absolute = os.path.abspath(path).replace(os.sep, "/")
        parts = [part for part in relative.split("/") if part not in ("", ".", "..")]
        for glob in self.globs:
            glob = glob.rstrip("/")
            if "/" in glob:
                pattern = glob[2:] if glob.startswith("./") else glob
                if fnmatchcase(relative, pattern) or fnmatchcase(absolute, pattern):
                    return True
            elif any(fnmatchcase(part, glob) for part in parts):
                return True
        return False

    def skips_directory(self, path: str) -> bool:
        """During the walk only: the built-in skip list, then the globs."""
        return os.path.basename(path) in SKIPPED_DIRECTORIES or self.excludes(path)


def discover(paths: Iterable[str], excluder: Excluder = Excluder()) -> Discovery:
    """Every Python file and notebook under `paths`, each once, in a deterministic order:
    named paths in the order given, directory contents sorted by name."""
    files: list[str] = []
    errors: list[FileError] = []
    seen: set[str | tuple[int, int]] = set()
    for path in paths:
        if excluder.excludes(path):
            continue
        if os.path.isdir(path):
            found: Iterable[str] = _walk(path, excluder, errors)
        elif os.path.lexists(path):
            # A named file is checked whatever its suffix, as ruff and flake8 do.
            found = (path,)
        else:
            errors.append(FileError(path, "no such file or directory"))
            continue
        for file in found:
            key = _identity(file)
            if key not in seen:
                seen.add(key)
                files.append(file)
    return Discovery(tuple(files), tuple(errors))


def _identity(path: str) -> str | tuple[int, int]:
    """What makes two paths the same file: device and inode (a hard link or
    a symlink reaches the same file), else the path itself (the reading
    reports what is wrong with it)."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return (info.st_dev, info.st_ino)


def _walk(root: str, excluder: Excluder, errors: list[FileError]) -> Iterator[str]:
    """Depth-first, sorted; directory symlinks are not followed (no cycles, no
    escaping the tree), symlinks to files are."""
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as exc:
        errors.append(FileError(root, f"cannot list directory: {exc.strerror or exc}"))
        return
    for entry in entries:
        path = entry.name if root == "." else os.path.join(root, entry.name)
        if entry.is_dir(follow_symlinks=False):
            if excluder.skips_directory(path) or os.path.exists(os.path.join(path, VIRTUALENV_MARKER)):
                continue
            yield from _walk(path, excluder, errors)
        elif (entry.name.endswith(SOURCE_SUFFIXES) and not excluder.excludes(path)
              and not _links_to_directory(entry)):
            yield path  # reading reports whatever is wrong with it (a symlink loop, a FIFO)


def _links_to_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a symlink loop
        return False


class SourceError(Exception):
    """A file that cannot be turned into text; the message is one line."""


def read_source(path: str) -> str:
    """The file's text, decoded per PEP 263. Raises `SourceError`."""
    return decode_source(read_bytes(path))


def read_bytes(path: str) -> bytes:
    """A regular file's bytes. Raises `SourceError` for anything else."""
    try:
        # Non-blocking: opening a FIFO for reading would wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise SourceError("file vanished or is a dangling symlink") from None
    except IsADirectoryError:
        raise SourceError("is a directory, not a file") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SourceError("symlink loop (too many levels of symbolic links)") from None
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SourceError("is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise SourceError("not a regular file (a FIFO, socket or device), not checked")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def decode_source(data: bytes) -> str:
    """Bytes to text as Python itself would read them. Raises `SourceError`."""
    if b"\0" in data:
        raise SourceError("binary file (contains NUL bytes), not checked")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if data.startswith(codecs.BOM_UTF8):
            raise SourceError("starts with a UTF-8 BOM but declares another encoding") from None
        if "invalid or missing" not in exc.msg:
            raise SourceError(f"bad encoding declaration: {exc.msg}") from None
        encoding = "utf-8"  # undeclared and not UTF-8: decoding says where it breaks
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        hint = "; declare its encoding with a `# -*- coding: ... -*-` comment"
        raise SourceError(
            f"cannot decode byte 0x{data[exc.start]:02x} at {line}:{column} as {encoding}"
            + (hint if encoding == "utf-8" else "")
        ) from None


# A line as CPython counts them (`\n`, `\r\n` or a lone `\r` ends it).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")


def source_lines(source: str) -> list[str]:
    """`source`'s lines as CPython numbers them, each with its line break."""
    if _only_python_breaks(source):
        return source.splitlines(keepends=True)  # (the same lines, a tenth of the cost)
    lines = [m.group() for m in _LINE.finditer(source)]
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def line_texts(source: str) -> list[str]:
    """`source_lines` without their breaks: the text a diagnostic's line and
    column index (`str.splitlines` also breaks at a form feed, and would
    put every line after one out of step)."""
    return [line.rstrip("\r\n") for line in source_lines(source)]


def _only_python_breaks(source: str) -> bool:
    """`source` holds none of the characters `str.splitlines` also breaks at
    (substring searches: a character class costs ten times more)."""
    if "\v" in source or "\f" in source or "\x1c" in source or "\x1d" in source or "\x1e" in source:
        return False
    return source.isascii() or not ("\x85" in source or "\u2028" in source or "\u2029" in source)
