"""Output formats by name. A new format (sarif, github, lsp) is one module
with a `report` function and one name here.

Each format's module is imported when it is first used, so a run that prints
text does not pay for SARIF's or LSP's imports (an editor lints on every
keystroke)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from tapelint.reporters.base import Report, Reporter, ReportOptions

FORMATS = ("text", "json", "sarif", "github", "lsp")


class _Reporters(Mapping[str, Reporter]):
    """`REPORTERS[name]` imports `tapelint.reporters.<name>` on demand."""

    def __getitem__(self, name: str) -> Reporter:
        if name not in FORMATS:
            raise KeyError(name)
        report: Reporter = importlib.import_module(f"tapelint.reporters.{name}").report
        return report

    def __iter__(self) -> Iterator[str]:
        return iter(FORMATS)

    def __len__(self) -> int:
        return len(FORMATS)


REPORTERS: Mapping[str, Reporter] = _Reporters()

__all__ = ["FORMATS", "REPORTERS", "Report", "ReportOptions", "Reporter"]
