"""`--format github`: GitHub Actions workflow commands, one annotation per
diagnostic, shown on the pull request's diff:

    ::error file=train.py,line=10,col=9,endLine=10,endColumn=16,title=TL001 (hoisted-tracked-tensor)::`feats` is ...

Lines and columns are 1-based (columns shifted from the model's 0-based).
The message carries the related locations and the fixes on further lines,
as the text format shows them, since an annotation has no other place for
them. A file that could not be checked is an `::error` on that file without
a position. Nothing else is printed: every line is a command.

A notebook position (a line within a cell) is not a line of the `.ipynb`
file, so its annotation names the file without a position and the message
starts with `cell C, line L:`.

Escaping follows the Actions runner: in a message `%`, CR and LF become
`%25`, `%0D`, `%0A`; in a property value `:` and `,` too (`%3A`, `%2C`).
"""

from __future__ import annotations

from typing import TextIO

from tapelint.diagnostics import Diagnostic, FileError, Position, Severity
from tapelint.reporters.base import Report, ReportOptions

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def report(report: Report, out: TextIO, options: ReportOptions) -> None:
    for error in report.path_errors:
        out.write(format_error(error) + "\n")
    for result in report.results:
        for diagnostic in result.diagnostics:
            out.write(format_diagnostic(diagnostic) + "\n")
        for error in result.errors:
            out.write(format_error(error) + "\n")


def format_diagnostic(diagnostic: Diagnostic) -> str:
    start, end = diagnostic.range.start, diagnostic.range.end
    properties = {"file": diagnostic.path}
    message = diagnostic.message
    if start.cell is None:
        properties.update(line=str(start.line), col=str(start.column + 1),
                          endLine=str(end.line), endColumn=str(end.column + 1))
    else:
        message = f"cell {start.cell}, line {start.line}: {message}"
    properties["title"] = f"{diagnostic.code} ({diagnostic.name})"
    lines = [message]
    lines += [
        f"{related.role.value} {_location(related.path, related.range.start)}: {related.message}"
        for related in diagnostic.related
        if (related.path, related.range) != (diagnostic.path, diagnostic.range)
    ]
    lines += [f"help ({fix.safety.value}): {fix.description}" for fix in diagnostic.fixes]
    return _command(_COMMANDS[diagnostic.severity], properties, "\n".join(lines))


def format_error(error: FileError) -> str:
    return _command("error", {"file": error.path, "title": "tapelint: file not checked"}, error.message)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, properties: dict[str, str], message: str) -> str:
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{name} {rendered}::{escape_data(message)}"


def _location(path: str, position: Position) -> str:
    """As the text format writes it: `a.py:3:5`, `nb.ipynb:cell 2:3:5`."""
    cell = f"cell {position.cell}:" if position.cell is not None else ""
    return f"{path}:{cell}{position.line}:{position.column + 1}"
