"""Output formats by name. A new format (sarif, github, lsp) is one module
with a `report` function and one line here."""

from __future__ import annotations

from tapelint.reporters import github, json, lsp, sarif, text
from tapelint.reporters.base import Report, Reporter, ReportOptions

REPORTERS: dict[str, Reporter] = {
    "text": text.report,
    "json": json.report,
    "sarif": sarif.report,
    "github": github.report,
    "lsp": lsp.report,
}

__all__ = ["REPORTERS", "Report", "ReportOptions", "Reporter"]
