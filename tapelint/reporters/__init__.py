"""Output formats by name. A new format (sarif, github, lsp) is one module
with a `report` function and one line here."""

from __future__ import annotations

from tapelint.reporters import json, text
from tapelint.reporters.base import Report, Reporter, ReportOptions

REPORTERS: dict[str, Reporter] = {
    "text": text.report,
    "json": json.report,
}

__all__ = ["REPORTERS", "Report", "ReportOptions", "Reporter"]
