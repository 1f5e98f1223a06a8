"""tapelint's diagnostics and fixes as LSP objects.

tapelint counts lines from 1 and columns in code points; LSP counts lines
from 0 and columns in the negotiated encoding (UTF-16 unless the client
offers better). Every position therefore goes through the document's own
lines and pygls' position codec, so a finding after a `é` or an emoji still
underlines the right characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lsprotocol import types
from pygls.workspace import PositionCodec

from tapelint.diagnostics import Diagnostic, FileError, Fix, Range, Safety, Severity
from tapelint.reporters.lsp import path_to_uri

SOURCE = "tapelint"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
}


@dataclass(frozen=True)
class DocumentText:
    """The snapshot a lint run saw: positions are converted against the text
    that was linted, not whatever the editor holds by the time we answer."""

    uri: str
    path: str  # the path `lint_source` was given
    version: int | None
    lines: tuple[str, ...]
    codec: PositionCodec

    def range(self, range_: Range) -> types.Range:
        return self.codec.range_to_client_units(self.lines, _code_points(range_))


def to_lsp_diagnostic(
    diagnostic: Diagnostic, text: DocumentText, cells: Mapping[int, DocumentText] | None = None
) -> types.Diagnostic:
    """One LSP diagnostic; each related location (definition, first backward,
    failing backward, accumulator) becomes relatedInformation, its role first.
    Every location is in the linted document, or, in a notebook, in one of
    its `cells` (by 1-based index; each cell is a document of its own)."""

    def text_of(range_: Range) -> DocumentText:
        cell = range_.start.cell
        return text if cells is None or cell is None else cells.get(cell, text)

    related = [
        types.DiagnosticRelatedInformation(
            location=_location(r.path, r.range, text_of(r.range)),
            message=f"{r.role.value}: {r.message}",
        )
        for r in diagnostic.related
    ]
    return types.Diagnostic(
        range=text.range(diagnostic.range),
        message=diagnostic.message,
        severity=_SEVERITY[diagnostic.severity],
        code=diagnostic.code,
        source=SOURCE,
        related_information=related or None,
    )


def not_checked(error: FileError) -> types.Diagnostic:
    """A document tapelint could not check (over the per-file budget, or the
    lint process died on it), said on its first line: the editor shows
    why there are no findings instead of an apparently clean file."""
    start = types.Position(line=0, character=0)
    return types.Diagnostic(
        range=types.Range(start=start, end=start),
        message=f"not checked by tapelint: {error.message}",
        severity=types.DiagnosticSeverity.Warning,
        source=SOURCE,
    )


def _location(path: str, range_: Range, text: DocumentText) -> types.Location:
    """In the linted document, or in another file of the project (a line
    inside an imported model: positions in code points, as on disk)."""
    if path == text.path:
        return types.Location(uri=text.uri, range=text.range(range_))
    return types.Location(uri=path_to_uri(path), range=_code_points(range_))


def _code_points(range_: Range) -> types.Range:
    """`range_` as a 0-based LSP range in code points (tapelint's columns)."""
    return types.Range(
        start=types.Position(line=range_.start.line - 1, character=range_.start.column),
        end=types.Position(line=range_.end.line - 1, character=range_.end.column),
    )


def quick_fixes(
    diagnostic: Diagnostic,
    lsp_diagnostic: types.Diagnostic,
    text: DocumentText,
    versioned: bool,
) -> list[types.CodeAction]:
    """One quick fix per fix that has edits. Display-only fixes
    (`retain_graph=True`) are explanations, never offered as edits, and a fix
    without edits (a move the rule only describes) has nothing to apply.
    With `versioned`, the edit names the document version it was computed
    for, so a client rejects it once the text has moved on. Exactly one
    action is preferred, the safe fix `--fix` applies, or none."""
    preferred = next((f for f in diagnostic.fixes if f.edits and f.safety is Safety.SAFE), None)
    return [
        types.CodeAction(
            title=_title(diagnostic, fix),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[lsp_diagnostic],
            is_preferred=fix is preferred,
            edit=_workspace_edit(fix, text, versioned),
        )
        for fix in diagnostic.fixes
        if fix.edits and fix.safety is not Safety.DISPLAY_ONLY
    ]


def _title(diagnostic: Diagnostic, fix: Fix) -> str:
    unsafe = " (unsafe)" if fix.safety is Safety.UNSAFE else ""
    return f"{diagnostic.code}: {fix.description}{unsafe}"


def _workspace_edit(fix: Fix, text: DocumentText, versioned: bool) -> types.WorkspaceEdit:
    edits = [
        types.TextEdit(range=text.range(edit.range), new_text=edit.new_text) for edit in fix.edits
    ]
    if versioned:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=text.uri, version=text.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={text.uri: edits})


def contains(range_: types.Range, position: types.Position) -> bool:
    return _key(range_.start) <= _key(position) <= _key(range_.end)


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Touching counts: a cursor right after a finding still gets its fixes."""
    return _key(a.start) <= _key(b.end) and _key(b.start) <= _key(a.end)


def _key(position: types.Position) -> tuple[int, int]:
    return (position.line, position.character)
