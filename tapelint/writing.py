"""Writing a fixed file back: whole or not at all, never a stray file.

* A file with one link is replaced atomically: a temporary file in the same
  directory, fsynced, given the old permissions, then `os.replace`d over it
  (a symlink keeps pointing at the fixed file).
* A file with several hard links is rewritten in place, so every link sees
  the fix, as formatters that write in place do (ruff, black); an atomic
  rename would silently split the links into two different files. Should
  that write fail half way, the old bytes are written back.
* SIGINT, SIGTERM and SIGHUP are held back while either happens: a signal
  that arrives mid-write is delivered once the file is whole and no
  temporary file is left.
* A file that changed on disk since it was read is not written.
"""

from __future__ import annotations

import codecs
import io
import os
import signal
import stat
import tempfile
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_HELD_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}


class FixError(Exception):
    """A file that could not be fixed; the message is one line."""


def _read(path: str) -> tuple[bytes, os.stat_result]:
    try:
        with open(path, "rb") as handle:
            return handle.read(), os.fstat(handle.fileno())
    except OSError as exc:
        raise FixError(f"cannot read: {exc.strerror or exc}") from None


def _encoding(data: bytes) -> str:
    """The encoding to write back with: the file's own (a BOM stays a BOM)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    return encoding


def _write(path: str, new: bytes, old: bytes, before: os.stat_result) -> None:
    """Replace the file's content, unless it changed since it was read."""
    target = os.path.realpath(path)  # a symlink keeps pointing at the fixed file
    try:
        now_data, now = _read(target)
    except FixError:
        raise FixError("file vanished since it was read; not fixed") from None
    if now_data != old or (now.st_mtime_ns, now.st_size) != (before.st_mtime_ns, before.st_size):
        raise FixError("file changed since it was read; not fixed")
    with _signals_held():
        if now.st_nlink > 1:
            _write_in_place(target, new, old)
        else:
            _replace(target, new, now)


def _replace(target: str, new: bytes, now: os.stat_result) -> None:
    directory = os.path.dirname(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tapelint", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(now.st_mode))
        os.replace(temporary, target)
    except OSError as exc:
        _remove(temporary)
        raise FixError(f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        _remove(temporary)
        raise


def _write_in_place(target: str, new: bytes, old: bytes) -> None:
    try:
        with open(target, "r+b") as handle:
            _replace_contents(handle, new, old)
    except OSError as exc:  # opening or closing it: writing raises FixError
        raise FixError(f"cannot write: {exc.strerror or exc}") from None


def _replace_contents(handle: io.BufferedRandom, new: bytes, old: bytes) -> None:
    """`new` over the file's contents; if that fails, `old` back, as far as the disk lets us."""
    try:
        _overwrite(handle, new)
    except OSError as exc:
        try:
            _overwrite(handle, old)
        except OSError:
            raise FixError(f"cannot write, and the file may be damaged: {exc.strerror or exc}") from None
        raise FixError(f"cannot write: {exc.strerror or exc}") from None


def _overwrite(handle: io.BufferedRandom, data: bytes) -> None:
    handle.seek(0)
    handle.write(data)
    handle.truncate()
    handle.flush()
    os.fsync(handle.fileno())


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back the signals that end a run, in this thread, until the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _remove(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)
