"""What a lint run is asked to do, independent of where the request came from
(command line, `pyproject.toml`, the language server)."""

from __future__ import annotations

from dataclasses import dataclass

from tapelint.diagnostics import Semantics


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

    def enabled(self, code: str) -> bool:
        if code in self.ignore:
            return False
        return self.select is None or code in self.select
