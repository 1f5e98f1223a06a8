"""What a lint run is asked to do, independent of where the request came from
(command line, `pyproject.toml`, the language server)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from tapelint.diagnostics import Semantics


@dataclass(frozen=True, order=True)
class PythonVersion:
    """A Python minor version, written as ruff writes it (`py312`)."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"py{self.major}{self.minor}"

    @property
    def dotted(self) -> str:
        return f"{self.major}.{self.minor}"


# The Python tapelint runs on: its `compile()` judges the syntax of every file
# whose target version is not newer.
RUNNING = PythonVersion(*sys.version_info[:2])
# The values `target-version` accepts: ruff's names, each a grammar libcst
# knows (`tests/test_target_version.py` checks them against libcst's list).
TARGET_VERSIONS = tuple(PythonVersion(3, minor) for minor in range(8, 15))


def parse_target_version(text: object) -> PythonVersion | None:
    """The `target-version` value `text` names (`"py312"`); None if it names none."""
    return next((version for version in TARGET_VERSIONS if str(version) == text), None)


@dataclass(frozen=True)
class Settings:
    semantics: Semantics = Semantics.TORCH
    # Rule codes to report; None means every rule.
    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    # Extra dotted call names (`trainer.backward`) that run a backward on
    # their first argument, and extra calls whose result is tracked.
    backward_functions: tuple[str, ...] = ()
    tracked_functions: tuple[str, ...] = ()
    # `--fix` also applies unsafe fixes (config `unsafe-fixes`).
    unsafe_fixes: bool = False
    # Report suppression comments that suppress nothing (TL901).
    report_unused_suppressions: bool = False
    # The per-file budget: a file that needs more CPU seconds, or more memory
    # (MB above what the checking process held before it), is reported in one
    # line and the run goes on. The largest file of the installed torch
    # package needs under a tenth of either.
    file_timeout: float = 120.0
    file_memory_mb: int = 4096
    # Where first-party imports are found besides each file's own directory
    # (config `src`, absolute), and the project root ("" = the current directory).
    src: tuple[str, ...] = ()
    project_root: str = ""
    # The Python the code is written for (config `target-version`, else the
    # lower bound of `requires-python`, else the running one): when it is
    # newer than the running Python, libcst's parser, not `compile()`, judges
    # the syntax the running Python refuses (`tapelint.lint`).
    target_version: PythonVersion = RUNNING

    def enabled(self, code: str) -> bool:
        if code in self.ignore:
            return False
        return self.select is None or code in self.select
