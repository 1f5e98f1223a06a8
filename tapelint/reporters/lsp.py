"""`--format lsp`: Language Server Protocol diagnostics, for editors and
tools that speak LSP but run tapelint as a command.

Output is JSON Lines: one `textDocument/publishDiagnostics` params object
(`{"uri": ..., "diagnostics": [...]}`) per checked file, in discovery order,
one per line. A file without findings gets an empty list, which is how LSP
clears stale diagnostics. A file that could not be checked gets one error at
its start, without a code.

Positions follow LSP: 0-based lines, and columns in UTF-16 code units (the
protocol's default encoding), converted from the model's code points using
the file's text when it can be read. `codeDescription` is omitted: tapelint
has no published rule pages to link to, and `tapelint rule CODE` (or hover in
the language server) shows the documentation.

A notebook position is a line within a cell: the range is within that cell
(0-based), `data.cell` names the cell (1-based, as in the JSON format), and
a related location in a cell says so in its message; a client that shows
notebook cells as documents maps the cell to its own cell URI.

`to_lsp_diagnostic` is the conversion the language server reuses. A fix is
carried in the diagnostic's `data` (which LSP hands back on
`textDocument/codeAction`) as a `WorkspaceEdit`:

    "data": {"fails_under": ["torch", "strict"],
             "fixes": [{"title": ..., "kind": "detach", "safety": "unsafe",
                        "edit": {"changes": {uri: [TextEdit, ...]}}}]}

Only fixes that carry edits are listed, and never the display-only
`retain_graph` alternative: it is an explanation, not an edit to offer (the
same choice as the language server's quick fixes); nor fixes in notebook
cells.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from tapelint.diagnostics import Diagnostic, FileError, Fix, Position, Range, Safety, Severity, split_lines
from tapelint.reporters.base import Report, ReportOptions
from tapelint.reporters.json import without_surrogates

SOURCE = "tapelint"
ERROR, WARNING = 1, 2  # LSP DiagnosticSeverity
_SEVERITIES = {Severity.ERROR: ERROR, Severity.WARNING: WARNING}


def report(report: Report, out: TextIO, options: ReportOptions) -> None:
    for error in report.path_errors:
        _write(out, path_to_uri(error.path), [file_error_diagnostic(error)])
    for result in report.results:
        uri = path_to_uri(result.path)
        source = options.read_source(result.path) if result.diagnostics else None
        lines = split_lines(source) if source is not None else None
        diagnostics = [to_lsp_diagnostic(d, uri, lines) for d in result.diagnostics]
        diagnostics += [file_error_diagnostic(error) for error in result.errors]
        _write(out, uri, diagnostics)


def _write(out: TextIO, uri: str, diagnostics: list[dict[str, Any]]) -> None:
    out.write(json.dumps(without_surrogates({"uri": uri, "diagnostics": diagnostics})) + "\n")


def path_to_uri(path: str) -> str:
    """A `file:` URI for a path as given (absolute, not symlink-resolved:
    editors name a file by the path it was opened under)."""
    return Path(os.path.abspath(path)).as_uri()


def to_lsp_diagnostic(
    diagnostic: Diagnostic,
    uri: str,
    lines: Sequence[str] | None = None,
    uri_of: Callable[[str], str] = path_to_uri,
) -> dict[str, Any]:
    """An LSP `Diagnostic` for `diagnostic`, in the document `uri`.

    `lines` (see `split_lines`) is the document's text, for UTF-16 columns;
    without it columns stay code points, which is exact for ASCII lines and
    for a client that negotiated the `utf-32` position encoding. Related
    locations in other files get `uri_of(path)` and code-point columns.
    """

    def range_in(path: str, range_: Range) -> dict[str, Any]:
        same_text = path == diagnostic.path and range_.start.cell is None
        return to_lsp_range(range_, lines if same_text else None)

    def location_uri(path: str) -> str:
        return uri if path == diagnostic.path else uri_of(path)

    result: dict[str, Any] = {
        "range": range_in(diagnostic.path, diagnostic.range),
        "severity": _SEVERITIES[diagnostic.severity],
        "code": diagnostic.code,
        "source": SOURCE,
        "message": diagnostic.message,
    }
    if diagnostic.related:
        result["relatedInformation"] = [
            {
                "location": {"uri": location_uri(related.path), "range": range_in(related.path, related.range)},
                "message": f"{related.role.value}: {_cell_prefix(related.range)}{related.message}",
            }
            for related in diagnostic.related
        ]
    data: dict[str, Any] = {"fails_under": [semantics.value for semantics in diagnostic.fails_under]}
    if diagnostic.range.start.cell is not None:
        data["cell"] = diagnostic.range.start.cell
    fixes = [_fix(fix, uri, lines) for fix in diagnostic.fixes if _is_text_edit(fix)]
    if fixes:
        data["fixes"] = fixes
    result["data"] = data
    return result


def _is_text_edit(fix: Fix) -> bool:
    """A fix to offer as edits of the document: it has edits, it is not the
    display-only `retain_graph`, and it is not inside notebook cells (whose
    positions are not the `.ipynb` file's)."""
    return (
        bool(fix.edits)
        and fix.safety is not Safety.DISPLAY_ONLY
        and all(edit.range.start.cell is None for edit in fix.edits)
    )


def _cell_prefix(range_: Range) -> str:
    return f"(cell {range_.start.cell}) " if range_.start.cell is not None else ""


def _fix(fix: Fix, uri: str, lines: Sequence[str] | None) -> dict[str, Any]:
    edits = [{"range": to_lsp_range(edit.range, lines), "newText": edit.new_text} for edit in fix.edits]
    return {
        "title": fix.description,
        "kind": fix.kind.value,
        "safety": fix.safety.value,
        "edit": {"changes": {uri: edits}},
    }


def to_lsp_range(range_: Range, lines: Sequence[str] | None = None) -> dict[str, Any]:
    return {"start": to_lsp_position(range_.start, lines), "end": to_lsp_position(range_.end, lines)}


def to_lsp_position(position: Position, lines: Sequence[str] | None = None) -> dict[str, int]:
    """1-based line, 0-based code-point column -> LSP's 0-based line and
    UTF-16 column (when the line's text is known)."""
    line = position.line - 1
    column = position.column
    if lines is not None and 0 <= line < len(lines):
        text = lines[line]
        prefix = text[:column]
        column = len(prefix.encode("utf-16-le")) // 2 + max(column - len(text), 0)
    return {"line": max(line, 0), "character": column}


def file_error_diagnostic(error: FileError) -> dict[str, Any]:
    """A file tapelint could not check, as an error at its first position."""
    return {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "severity": ERROR,
        "source": SOURCE,
        "message": f"tapelint could not check this file: {error.message}",
    }
