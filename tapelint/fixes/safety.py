"""Which fix `--fix` applies to a diagnostic, and what the reporters say is
fixable: kept free of the linter's imports, so a reporter can ask it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Optional

from tapelint.diagnostics import Diagnostic, Fix, Safety


def applicable_fix(diagnostic: Diagnostic, unsafe: bool) -> Optional[Fix]:
    """The fix `--fix` would apply to this diagnostic, if any: the first
    whose safety is allowed and that has edits (rules list the preferred first)."""
    allowed = (Safety.SAFE, Safety.UNSAFE) if unsafe else (Safety.SAFE,)
    return next((f for f in diagnostic.fixes if f.edits and f.safety in allowed), None)


@dataclass(frozen=True)
class Fixable:
    """How many diagnostics `--fix` would fix (`safe`), and how many more
    only with `--unsafe-fixes` (`unsafe_only`)."""

    safe: int
    unsafe_only: int

    @staticmethod
    def count(diagnostics: Iterable[Diagnostic]) -> Fixable:
        safe = unsafe_only = 0
        for diagnostic in diagnostics:
            if applicable_fix(diagnostic, unsafe=False) is not None:
                safe += 1
            elif applicable_fix(diagnostic, unsafe=True) is not None:
                unsafe_only += 1
        return Fixable(safe, unsafe_only)

    def more_with_unsafe(self) -> str:
        """` (M more with `--unsafe-fixes`)`, or nothing."""
        return f" ({self.unsafe_only} more with `--unsafe-fixes`)" if self.unsafe_only else ""

    def line(self) -> str:
        """ruff's closing line: `[*] N fixable with `--fix` (M more with `--unsafe-fixes`).`, or,
        with nothing `--fix` would change, `No fixes with `--fix` (M more with `--unsafe-fixes`).`
        (no `[*]`: no finding carries the marker then)."""
        if not self.safe and not self.unsafe_only:
            return ""
        if not self.safe:
            return f"No fixes with `--fix`{self.more_with_unsafe()}."
        return f"[*] {self.safe} fixable with `--fix`{self.more_with_unsafe()}."
