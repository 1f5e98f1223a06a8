"""The diagnostic model: what a rule reports, as plain frozen data.

Every output format (text, JSON, SARIF, LSP) and the engine's `confirm` read
these objects and nothing else, so they carry everything a consumer needs:
positions (1-based lines, 0-based columns, as in `docs/output.md`), the related
locations with their roles, the semantics under which the hazard fails, and
the fixes that apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Semantics(str, Enum):
    """Which tape the program is judged against (see `semantics.md`)."""

    TORCH = "torch"
    STRICT = "strict"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


class Role(str, Enum):
    """What a related location is, exactly as `docs/rules.md` names the roles."""

    DEFINITION = "definition"
    FIRST_BACKWARD = "first-backward"
    FAILS_AT = "fails-at"
    ACCUMULATOR = "accumulator"
    STEP = "step"  # the optimizer step that changed what a graph saved (TL007)


class FixKind(str, Enum):
    DETACH = "detach"
    RECOMPUTE = "recompute"
    COMBINE = "combine"
    ITEM = "item"
    REMOVE = "remove"
    RETAIN_GRAPH = "retain_graph"
    REORDER = "reorder"  # move a statement (TL007: the step after the backward)


class Safety(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    # Shown to the user as an explained alternative, never applied by --fix.
    DISPLAY_ONLY = "display-only"


# libcst (like LSP) ends a line at LF, CRLF or CR only, unlike str.splitlines.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(source: str) -> list[str]:
    """`source`'s lines as positions count them."""
    return _LINE_BREAK.split(source)


@dataclass(frozen=True, order=True)
class Position:
    line: int  # 1-based (within the cell, in a notebook)
    column: int  # 0-based
    # In a notebook: the 1-based index of the cell in the notebook's `cells`
    # (markdown cells counted), see `tapelint.notebooks`; None in a module.
    cell: int | None = None

    def to_json(self) -> dict[str, int]:
        if self.cell is None:
            return {"line": self.line, "column": self.column}
        return {"cell": self.cell, "line": self.line, "column": self.column}


@dataclass(frozen=True, order=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def of(cls, line: int, column: int, end_line: int, end_column: int) -> Range:
        return cls(Position(line, column), Position(end_line, end_column))

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start.to_json(), "end": self.end.to_json()}


@dataclass(frozen=True)
class Related:
    role: Role
    path: str
    range: Range
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role.value,
            "path": self.path,
            "range": self.range.to_json(),
            "message": self.message,
        }


@dataclass(frozen=True)
class Edit:
    range: Range
    new_text: str

    def to_json(self) -> dict[str, Any]:
        return {"range": self.range.to_json(), "new_text": self.new_text}


@dataclass(frozen=True)
class Fix:
    kind: FixKind
    safety: Safety
    description: str
    edits: tuple[Edit, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "safety": self.safety.value,
            "description": self.description,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    range: Range
    fails_under: tuple[Semantics, ...]
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()

    def related_of(self, role: Role) -> Related | None:
        return next((r for r in self.related if r.role is role), None)

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        start = self.range.start
        return (self.path, start.cell or 0, start.line, start.column, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "range": self.range.to_json(),
            "fails_under": [s.value for s in self.fails_under],
            "related": [r.to_json() for r in self.related],
            "fixes": [f.to_json() for f in self.fixes],
        }


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked at all (unreadable, not text, vanished)."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass(frozen=True)
class FileWarning:
    """Something wrong in a checked file that is no finding and changes no
    exit code (an invalid suppression comment); printed on stderr."""

    path: str
    position: Position
    message: str


@dataclass(frozen=True)
class FileResult:
    path: str
    diagnostics: tuple[Diagnostic, ...] = ()
    errors: tuple[FileError, ...] = field(default=())
    skipped: bool = False  # pre-check proved the file cannot hold a hazard
    warnings: tuple[FileWarning, ...] = ()
