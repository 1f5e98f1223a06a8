"""What every output format receives: the run's results and how to show them.

A reporter is a function `(Report, TextIO, ReportOptions) -> None`; formats
register by name in `tapelint.reporters.REPORTERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from tapelint.diagnostics import Diagnostic, FileError, FileResult, Semantics


@dataclass(frozen=True)
class Report:
    version: str
    semantics: Semantics
    results: tuple[FileResult, ...]  # one per file, in discovery order
    # Paths that could not even be listed (a named path that does not exist).
    path_errors: tuple[FileError, ...] = ()

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(d for result in self.results for d in result.diagnostics)

    @property
    def errors(self) -> tuple[FileError, ...]:
        return self.path_errors + tuple(e for result in self.results for e in result.errors)

    @property
    def files_checked(self) -> int:
        """Files read and linted to the end (pre-check skips included): a file
        with an `errors` entry was not checked."""
        return sum(1 for result in self.results if not result.errors)

    @property
    def files_skipped(self) -> int:
        return sum(1 for result in self.results if result.skipped and not result.errors)


@dataclass(frozen=True)
class ReportOptions:
    color: bool = False
    quiet: bool = False  # findings only: no summary line
    # The text of a file, for showing source lines; None when unavailable.
    read_source: Callable[[str], str | None] = lambda path: None


Reporter = Callable[[Report, TextIO, ReportOptions], None]
