"""`--format json`: one object on stdout, exactly as `docs/output.md` specifies (schema: `docs/output.schema.json`)."""

from __future__ import annotations

import json
from typing import TextIO

from tapelint.reporters.base import Report, ReportOptions


def report(report: Report, out: TextIO, options: ReportOptions) -> None:
    document = {
        "version": report.version,
        "semantics": report.semantics.value,
        "files_checked": report.files_checked,
        "diagnostics": [diagnostic.to_json() for diagnostic in report.diagnostics],
        "errors": [error.to_json() for error in report.errors],
    }
    # ASCII escapes keep the output valid on any terminal encoding.
    json.dump(document, out, indent=2)
    out.write("\n")
