"""`tapelint check - --stdin-filename NAME`: lint the text an editor or a
formatter pipes in, and report it as NAME.

The bytes are decoded and linted as the file would be (PEP 263 decoding,
inline suppressions, a notebook when NAME ends in `.ipynb`), so a buffer and
the file it will become give the same diagnostics.
NAME is only a label: nothing is read from it, and the text reporter shows
source lines from the piped text, not from whatever is on disk under NAME.
Without `--stdin-filename` the file is reported as `-`, as ruff does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from tapelint.diagnostics import FileError, FileResult
from tapelint.files import SourceError, decode_source
from tapelint.runner import Outcome, RunResult, lint_text_contained
from tapelint.settings import Settings
from tapelint.writing import _encoding

STDIN_PATH = "-"


@dataclass(frozen=True)
class StdinRun:
    """The result of linting standard input, and its text for the reporters."""

    name: str
    source: str | None  # None when the bytes could not be decoded
    run: RunResult
    encoding: str = "utf-8"  # what the bytes were in: `--fix -` writes the fixed text back in it

    def read_source(self, path: str) -> str | None:
        return self.source if path == self.name else None


def is_stdin(paths: list[str]) -> bool:
    """Whether the command line asks for standard input (`-` as the only path)."""
    return paths == [STDIN_PATH]


def lint_stdin(stream: BinaryIO, name: str | None, settings: Settings) -> StdinRun:
    """Read all of `stream` and lint it as the file `name` (default `-`)."""
    label = name or STDIN_PATH
    data = stream.read()
    try:
        source = decode_source(data)
    except SourceError as exc:
        result = FileResult(label, errors=(FileError(label, str(exc)),))
        return StdinRun(label, None, RunResult((Outcome(result),)))

    # In a process of its own, under the per-file budget: one pathological
    # buffer is one line of error, never the end of the editor's linter.
    return StdinRun(label, source, RunResult((lint_text_contained(source, label, settings),)), _encoding(data))
