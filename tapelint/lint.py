"""Lint one source text: parse, analyse, let each enabled rule report.

This is the one entry point every front end uses (CLI, language server,
`confirm`). It never raises on bad input: a syntax error becomes TL900, and
anything else the file does to the analysis becomes a `FileError`.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tapelint.analysis.driver import analyze_module
from tapelint.origins import with_origins
from tapelint.precheck import may_hold_hazard
from tapelint.diagnostics import Diagnostic, FileError, FileResult, Range
from tapelint.rules import ALL_RULES
from tapelint.rules.base import ReportContext
from tapelint.rules.tl900_parse_error import ParseError
from tapelint.settings import Settings


# The start of the error for a file that hit the recursion limit.
TOO_DEEP = "too deeply nested"


def lint_source(source: str, path: str, settings: Settings, precheck: bool = True) -> FileResult:
    """Lint one file's text. With `precheck`, a file that textually cannot
    hold a hazard is not parsed by libcst at all (`FileResult.skipped`)."""
    if precheck and not may_hold_hazard(source, settings, path):
        return FileResult(path, diagnostics=_python_syntax_errors(source, path, settings), skipped=True)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        if not settings.enabled(ParseError.code):
            return FileResult(path)
        return FileResult(path, diagnostics=(ParseError.from_syntax_error(exc, path),))
    except RecursionError:
        return FileResult(path, errors=(FileError(path, f"{TOO_DEEP} for the parser"),))
    try:
        diagnostics = _check(module, source, path, settings)
    except RecursionError:
        return FileResult(path, errors=(FileError(path, f"{TOO_DEEP} to analyse"),))
    return FileResult(path, diagnostics=diagnostics)


def _python_syntax_errors(source: str, path: str, settings: Settings) -> tuple[Diagnostic, ...]:
    """TL900 for a file the pre-check skipped: CPython's parser, ten times
    cheaper than libcst's, still finds its syntax errors."""
    if not settings.enabled(ParseError.code):
        return ()
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return (ParseError.from_python_error(exc, source.splitlines(keepends=True), path),)
    except (ValueError, RecursionError, MemoryError):
        return ()  # NUL bytes or absurd nesting: reading or the full parse reports these
    return ()


def _check(module: cst.Module, source: str, path: str, settings: Settings) -> tuple[Diagnostic, ...]:
    located = analyze_module(module, settings, lines=source.count("\n") + 1, path=path)
    if not located:
        return ()
    positions: dict[cst.CSTNode, object] = {}

    def range_of(node: cst.CSTNode) -> Range:
        # Positions cost a full code generation pass, so they are computed
        # only for files that have something to report, and only once.
        if not positions:
            positions.update(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
        code_range = positions[node]
        return Range.of(
            code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column
        )

    ctx = ReportContext(path=path, module=module, range_of=range_of)
    found: dict[tuple, Diagnostic] = {}
    for rule_class in ALL_RULES:
        if not settings.enabled(rule_class.code):
            continue
        rule = rule_class()
        for item in located:
            # Under --semantics torch, a reuse that only a strict tape rejects is not reported.
            for diagnostic in rule.check((item.hazard,), ctx, settings.semantics):
                diagnostic = with_origins(diagnostic, item.origins, path)
                found.setdefault((diagnostic.code, diagnostic.range), diagnostic)
    return tuple(sorted(found.values(), key=lambda d: d.sort_key))
