"""`--format text`: what a person reads in a terminal, in the style of ruff
and rustc.

    train.py:10:8: TL001 `base` is computed once at line 10, outside the loop ...
       |
    10 |     base = torch.tanh(x)
       |            ^^^^^^^^^^^^^
       |
       = fails-at train.py:15:5: this backward walks it again and fails
       = help (unsafe fix): detach `base` where it is created (it then gets no gradient)

A finding that `--fix` can fix is marked `[*]` after its code, and a line
before the summary counts them (ruff's "N fixable with `--fix`"). Columns
are 1-based here, as in every editor and in ruff/flake8 (JSON keeps the
0-based columns of `docs/output.md`). A file that could not be checked is one
line, `path: error: message`. The run ends with a one-line summary.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from tapelint.diagnostics import Diagnostic, FileError, Position, Range, Safety
from tapelint.files import line_texts
from tapelint.fixes.safety import Fixable, applicable_fix
from tapelint.reporters.base import Report, ReportOptions

_TAB_WIDTH = 4
# What a fix is, said after its `help`: a safe fix is what `--fix` does; an
# unsafe one needs `--unsafe-fixes`; a display-only one is never applied.
_LABELS = {Safety.SAFE: "", Safety.UNSAFE: " (unsafe fix)", Safety.DISPLAY_ONLY: " (suggestion only, no edit)"}


@dataclass(frozen=True)
class _Style:
    color: bool

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._paint(text, "1")

    def error(self, text: str) -> str:
        return self._paint(text, "1;31")

    def gutter(self, text: str) -> str:
        return self._paint(text, "1;34")

    def note(self, text: str) -> str:
        return self._paint(text, "1;36")

    def help(self, text: str) -> str:
        return self._paint(text, "1;32")


def report(report: Report, out: TextIO, options: ReportOptions) -> None:
    style = _Style(options.color)
    lines_cache: dict[str, Sequence[str] | None] = {}

    def lines_of(path: str) -> Sequence[str] | None:
        if path not in lines_cache:
            source = options.read_source(path)
            lines_cache[path] = line_texts(source) if source is not None else None
        return lines_cache[path]

    for error in report.path_errors:
        out.write(format_error(error, style) + "\n")
    for result in report.results:
        for diagnostic in result.diagnostics:
            out.write(format_diagnostic(diagnostic, lines_of(diagnostic.path), style))
        for error in result.errors:
            out.write(format_error(error, style) + "\n")
    if not options.quiet:
        fixable = Fixable.count(report.diagnostics).line()
        if fixable:  # before the summary, which stays the last line
            out.write(fixable + "\n")
        out.write(summary(report) + "\n")


def format_error(error: FileError, style: _Style) -> str:
    return f"{style.bold(error.path)}: {style.error('error')}: {error.message}"


def format_diagnostic(diagnostic: Diagnostic, lines: Sequence[str] | None, style: _Style) -> str:
    start = diagnostic.range.start
    marker = " [*]" if applicable_fix(diagnostic, unsafe=False) is not None else ""
    header = (f"{style.bold(location(diagnostic.path, start))}: {style.error(diagnostic.code)}{marker} "
              f"{diagnostic.message}")
    snippet = _snippet(diagnostic.range, lines)
    notes = [
        f"{style.note(related.role.value)} {location(related.path, related.range.start)}: {related.message}"
        for related in diagnostic.related
        if (related.path, related.range) != (diagnostic.path, diagnostic.range)
    ]
    notes += [f"{style.help('help')}{_LABELS[fix.safety]}: {fix.description}" for fix in diagnostic.fixes]
    if snippet is None and not notes:
        return header + "\n"
    width = len(str(start.line))
    bar = style.gutter(" " * width + " |")
    out = [header]
    if snippet is not None:
        source_line, indent, length = snippet
        number = style.gutter(f"{start.line} |")
        out += [bar, f"{number} {source_line}", f"{bar} {' ' * indent}{style.error('^' * length)}"]
        if notes:
            out.append(bar)
    out += [f"{style.gutter(' ' * width + ' =')} {note}" for note in notes]
    return "\n".join(out) + "\n\n"


def summary(report: Report) -> str:
    checked = f"{_plural(report.files_checked, 'file')} checked"
    if report.files_skipped:
        checked += f", {report.files_skipped} skipped by the pre-check"
    diagnostics = report.diagnostics
    errors = report.errors
    unreadable = f" {_plural(len(errors), 'file')} could not be checked." if errors else ""
    if diagnostics:
        files = len({d.path for d in diagnostics})
        return f"Found {_plural(len(diagnostics), 'diagnostic')} in {_plural(files, 'file')} ({checked}).{unreadable}"
    if errors:
        return f"No diagnostics ({checked}).{unreadable}"
    return f"All checks passed ({checked})."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def location(path: str, position: Position) -> str:
    """`path:line:col`, 1-based column; in a notebook `path:cell N:line:col`."""
    cell = f"cell {position.cell}:" if position.cell is not None else ""
    return f"{path}:{cell}{position.line}:{position.column + 1}"


def _snippet(range_: Range, lines: Sequence[str] | None) -> tuple[str, int, int] | None:
    """The primary line (tabs expanded), and where its underline starts and
    how long it is; a range over several lines is underlined to the end of
    its first line."""
    line_number = range_.start.line
    if lines is None or not 1 <= line_number <= len(lines):
        return None
    text = lines[line_number - 1]
    start = min(range_.start.column, len(text))
    end = range_.end.column if range_.end.line == line_number else len(text.rstrip())
    end = min(max(end, start), len(text))
    displayed = _expand(text)
    indent = _width(_expand(text[:start]))
    underline = max(_width(_expand(text[:end])) - indent, 1)
    return displayed.rstrip(), indent, underline


def _expand(text: str) -> str:
    return text.expandtabs(_TAB_WIDTH)


def _width(text: str) -> int:
    """Terminal columns: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
