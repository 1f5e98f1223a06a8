"""Jupyter notebooks (`.ipynb`): checked like a module.

The code cells, in order, are one program (a training loop in cell 5 reaches
a tensor hoisted in cell 3). Each cell contributes its lines, ending in a
newline; IPython syntax that is not Python is neutralised line for line, so
every other position stays put: a line magic or shell escape (`%time f()`,
`!pip install x`, `x = !ls`), a help line (`obj?`), and their backslash
continuations become `pass` at the same indentation; a cell magic (`%%bash`)
blanks its whole cell, except for the magics whose body is Python
(`%%time`, `%%timeit`, `%%capture`, `%%prun`), which lose only their first
line. A line inside an open bracket, a triple-quoted string or after a
backslash continues Python, so it is never a magic (`'%d' % (\n  %s)`-style
formatting). Notebooks declaring a language other than Python are not checked.

Positions: a diagnostic's positions (its range, related locations and fix
edits) carry `cell`, the 1-based index of the cell in the notebook's `cells`
array (markdown cells counted, so `nb["cells"][cell - 1]` is the cell), and
`line` is 1-based *within that cell*. JSON shows this as
`{"cell": 3, "line": 2, "column": 4}`; text as `nb.ipynb:cell 3:2:5`.
"line N" in messages is rewritten to "line M of cell C".

For fixes: `NotebookProgram.to_program`/`to_cell` convert between program
and cell positions, and `replace_cells` writes new cell sources back into the
notebook's JSON, leaving outputs, metadata and every other cell untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tapelint.diagnostics import Diagnostic, FileError, FileResult, Position, Range
from tapelint.settings import Settings

NOTEBOOK_SUFFIX = ".ipynb"
# Cell magics whose body is Python.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_ESCAPE = re.compile(r"^\s*(?:[!%]|\?\??[\w.]|[\w.]+\?\??\s*$)")
_ASSIGNED_ESCAPE = re.compile(r"^\s*[\w.\[\], ]+=\s*[!%]")
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")
_INDENT = re.compile(r"\s*\{\s*?\n( +)\"")


class NotebookError(Exception):
    """A notebook that cannot be read as one; the message is one line."""


@dataclass(frozen=True)
class CellSpan:
    cell: int  # 1-based index in the notebook's `cells`
    first_line: int  # program line of the cell's first line
    line_count: int


@dataclass(frozen=True)
class NotebookProgram:
    """The code cells as one program, and where each cell sits in it."""

    source: str
    cells: tuple[CellSpan, ...]

    def span_of_line(self, line: int) -> CellSpan:
        for span in self.cells:
            if line < span.first_line + span.line_count:
                return span
        return self.cells[-1]

    def to_cell(self, position: Position) -> Position:
        """A program position as a cell position."""
        span = self.span_of_line(position.line)
        return Position(position.line - span.first_line + 1, position.column, span.cell)

    def to_program(self, position: Position) -> Position:
        """A cell position (with `cell`) as a program position."""
        span = next(s for s in self.cells if s.cell == position.cell)
        return Position(span.first_line + position.line - 1, position.column)

    def range_to_cell(self, range_: Range) -> Range:
        return Range(self.to_cell(range_.start), self.to_cell(range_.end))

    def range_to_program(self, range_: Range) -> Range:
        return Range(self.to_program(range_.start), self.to_program(range_.end))


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


def load(text: str) -> dict[str, Any]:
    """The notebook's JSON document. Raises `NotebookError`."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at {exc.lineno}:{exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise NotebookError("not a valid notebook: JSON nested too deeply to read") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a valid notebook: no `cells` list")
    for index, cell in enumerate(document["cells"], 1):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise NotebookError(f"not a valid notebook: cell {index} has no text `source`")
    return document


def is_python(document: dict[str, Any]) -> bool:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    def field(table: str, key: str) -> Any:
        value = metadata.get(table)
        return value.get(key) if isinstance(value, dict) else None

    language = field("language_info", "name") or field("kernelspec", "language")
    return not isinstance(language, str) or language.lower() in ("python", "python3", "ipython")


def cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def program(document: dict[str, Any]) -> NotebookProgram:
    """The code cells as one program (magics neutralised, see the module docstring)."""
    parts: list[str] = []
    spans: list[CellSpan] = []
    line = 1
    for index, cell in enumerate(document["cells"], 1):
        if cell.get("cell_type") != "code":
            continue
        lines = _neutralise(cell_source(cell).splitlines())
        if not lines:
            continue
        spans.append(CellSpan(index, line, len(lines)))
        parts.append("\n".join(lines) + "\n")
        line += len(lines)
    return NotebookProgram("".join(parts), tuple(spans))


def _neutralise(lines: list[str]) -> list[str]:
    first = next((i for i, text in enumerate(lines) if text.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] not in _PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines = lines[:first] + [""] + lines[first + 1:]
    out: list[str] = []
    continued = False  # a magic's backslash continuation
    python = _Continuation()
    for text in lines:
        if continued or not python.open and (_ESCAPE.match(text) or _ASSIGNED_ESCAPE.match(text)):
            indent = text[: len(text) - len(text.lstrip())]
            out.append(f"{indent}pass" if not continued else "")
            continued = text.rstrip().endswith("\\")
        else:
            python.scan(text)
            out.append(text)
    return out


class _Continuation:
    """Whether the Python lines so far leave a statement open: an open
    bracket, a triple-quoted string, or a trailing backslash. A light scan
    (strings and comments skipped), not a tokenizer: it only has to tell a
    magic from the middle of a statement."""

    def __init__(self) -> None:
        self.depth = 0
        self.triple: str | None = None
        self.backslash = False

    @property
    def open(self) -> bool:
        return self.depth > 0 or self.triple is not None or self.backslash

    def scan(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            if self.triple is not None:
                end = line.find(self.triple, i)
                while end > 0 and _escaped(line, end):
                    end = line.find(self.triple, end + 1)
                if end < 0:
                    break
                i, self.triple = end + 3, None
                continue
            char = line[i]
            if char == "#":
                break
            if char in "\"'":
                if line.startswith(char * 3, i):
                    self.triple, i = char * 3, i + 3
                    continue
                i += 1
                while i < n and (line[i] != char or _escaped(line, i)):
                    i += 1
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            i += 1
        self.backslash = self.triple is None and line.endswith("\\") and not _escaped(line, len(line) - 1)


def _escaped(line: str, index: int) -> bool:
    backslashes = len(line[:index]) - len(line[:index].rstrip("\\"))
    return backslashes % 2 == 1


def lint_notebook(text: str, path: str, settings: Settings) -> FileResult:
    """Lint a notebook's JSON text; positions come back in cell coordinates."""
    try:
        document = load(text)
    except NotebookError as exc:
        return FileResult(path, errors=(FileError(path, str(exc)),))
    if not is_python(document):
        return FileResult(path)
    notebook = program(document)
    if not notebook.cells:
        return FileResult(path)
    from tapelint.suppressions import lint_module  # the linter, loaded only when a notebook is linted

    result = lint_module(notebook.source, path, settings)
    return replace(result, diagnostics=tuple(_to_cells(d, notebook) for d in result.diagnostics))


def _to_cells(diagnostic: Diagnostic, notebook: NotebookProgram) -> Diagnostic:
    def message(text: str) -> str:
        def cell_line(match: re.Match[str]) -> str:
            position = notebook.to_cell(Position(int(match[1]), 0))
            return f"line {position.line} of cell {position.cell}"

        return _LINE_REFERENCE.sub(cell_line, text)

    return replace(
        diagnostic,
        message=message(diagnostic.message),
        range=notebook.range_to_cell(diagnostic.range),
        related=tuple(
            replace(r, range=notebook.range_to_cell(r.range), message=message(r.message)) for r in diagnostic.related
        ),
        fixes=tuple(
            replace(
                fix,
                description=message(fix.description),
                edits=tuple(replace(e, range=notebook.range_to_cell(e.range)) for e in fix.edits),
            )
            for fix in diagnostic.fixes
        ),
    )


def replace_cells(text: str, sources: Mapping[int, str]) -> str:
    """The notebook's JSON with the given cells' (1-based) sources replaced and
    everything else as it was; written the way Jupyter writes (indent 1,
    non-ASCII kept, trailing newline)."""
    document = load(text)
    for index, source in sources.items():
        cell = document["cells"][index - 1]
        cell["source"] = source if isinstance(cell.get("source"), str) else source.splitlines(keepends=True)
    indent = _INDENT.match(text)
    return json.dumps(document, indent=len(indent[1]) if indent else 1, ensure_ascii=False) + "\n"


def cell_lines(text: str) -> dict[int, list[str]]:
    """Each cell's lines as the user wrote them (for showing and fingerprinting
    source lines); empty when the text is not a notebook."""
    try:
        document = load(text)
    except NotebookError:
        return {}
    return {index: cell_source(cell).splitlines() for index, cell in enumerate(document["cells"], 1)}
