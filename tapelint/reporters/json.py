"""`--format json`: one object on stdout, exactly as `docs/output.md` specifies
(schema: `docs/output.schema.json`).

A file name that is not valid UTF-8 (Python holds its undecodable bytes as
lone surrogates) is written with each such byte as the four characters
`\\xHH`, Python's `backslashreplace`: the output stays valid Unicode, and a
reader that needs the name's bytes maps each `\\xHH` back to byte 0xHH.
SARIF and LSP output use percent-encoded URIs instead.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

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
    json.dump(without_surrogates(document), out, indent=2)
    out.write("\n")


def without_surrogates(value: Any) -> Any:
    """`value` (JSON data) with every undecodable byte of a string, held as a
    lone surrogate, written as `\\xHH`; strings without one are returned as they are."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {without_surrogates(key): without_surrogates(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_surrogates(item) for item in value]
    return value
