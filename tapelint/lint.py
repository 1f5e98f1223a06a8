"""Lint one source text: parse, analyse, let each enabled rule report.

This is the one entry point every front end uses (CLI, language server,
`confirm`). It never raises on bad input: a syntax error becomes TL900, and
anything else the file does to the analysis becomes a `FileError`.

CPython judges first: `compile()` costs a few percent of libcst's parse, and
whatever it refuses (syntax errors, compile-time errors such as `'return'
outside function`, nesting too deep for it) is TL900 without libcst ever
seeing the text. This also keeps libcst's parser, whose time grows faster
than quadratically with expression nesting (measured: a 2,000-term sum takes
12 s, 4,000 terms over a minute), away from every file that nests deeper
than `python prog.py` itself accepts. A file the pre-check keeps is parsed
by CPython once: its `ast` tree is compiled for the verdict, then built into
the quick tree (`_python_verdict`).

One exception: when the settings' target version is newer than the running
Python, a text that CPython's *parser* refuses may be valid on the target
(`def f[T]()` on 3.11 for 3.12), so libcst's parse decides instead: what it
parses is linted, what it refuses is TL900 with libcst's error. libcst has
one grammar, its newest (`PartialParserConfig.python_version` does not reach
its native parser), so it judges "valid on some Python libcst knows", not on
the target exactly. What no newer Python accepts stays CPython's verdict:
the compiler's checks after a successful parse (`'return' outside
function`), its tokenizer's nesting limits and NUL bytes, and nesting too
deep for it.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import libcst as cst

from tapelint.analysis import quick_tree, reads
from tapelint.analysis.driver import analyze_module
from tapelint.analysis.names import ModuleNames
from tapelint.analysis.parsing import parse_module, python_tree
from tapelint.analysis.project import CACHE as PARSED
from tapelint.analysis.project import QUICK_CACHE
from tapelint.analysis.thin import left_out, thin_source
from tapelint.diagnostics import Diagnostic, FileError, FileResult, Range
from tapelint.files import source_lines
from tapelint.origins import Positions, positions_in, with_origins
from tapelint.positions import StatementPositions
from tapelint.precheck import may_hold_hazard, may_hold_hazard_in_tree
from tapelint.rules import ALL_RULES
from tapelint.rules.base import ReportContext
from tapelint.rules.tl900_parse_error import ParseError
from tapelint.settings import RUNNING, PythonVersion, Settings

# The start of the error for a file that hit the recursion limit.
TOO_DEEP = "too deeply nested"
# The recursion limit `python prog.py` runs with: CPython's compiler scales its
# nesting limit from it, and TL900 means "CPython refuses this file".
_PYTHON_RECURSION_LIMIT = 1000
# libcst holds ~600 bytes per source character; its native parser aborts the
# whole process when an allocation fails, so text it cannot hold in the
# memory budget is refused before it is parsed.
PARSER_BYTES_PER_CHARACTER = 600
# What CPython's tokenizer refuses whatever the grammar, and reports as a
# SyntaxError (after an earlier syntax error too: it tokenizes the rest of
# the file), as every newer Python does: its nesting limits, which libcst's
# parser would overflow on, and NUL bytes, which libcst accepts in a string.
_REFUSED_BY_EVERY_PYTHON = (
    "too many nested parentheses",
    "too many levels of indentation",
    "source code string cannot contain null bytes",
)


def lint_source(source: str, path: str, settings: Settings, precheck: bool = True) -> FileResult:
    """Lint one file's text. With `precheck`, a file that textually cannot
    hold a hazard is not parsed by libcst at all (`FileResult.skipped`)."""
    with reads.one_view():  # its pre-check, thin and whole analyses resolve the same imports
        return _lint_source(source, path, settings, precheck)


def _lint_source(source: str, path: str, settings: Settings, precheck: bool) -> FileResult:
    # A BOM is encoding, not text: files read from disk lose it in decoding,
    # text handed in directly (library callers, editors) loses it here.
    source = source.removeprefix("\ufeff")
    holds = not precheck or may_hold_hazard(source, settings, path)
    tree, refusal = _python_verdict(source, path, settings.target_version, want_tree=holds)
    if refusal is not None and not refusal.for_libcst:
        return FileResult(path, diagnostics=_reported(refusal.diagnostic, settings))
    # A text CPython refused is libcst's to judge: neither the pre-check nor
    # the thin parse may pass over its syntax errors.
    judged_by_libcst = refusal is not None
    if not judged_by_libcst and not holds:
        return FileResult(path, skipped=True)
    if precheck and tree is not None and not may_hold_hazard_in_tree(source, tree, settings, path):
        return FileResult(path, skipped=True)
    if len(source) * PARSER_BYTES_PER_CHARACTER > settings.file_memory_mb * 2**20:
        limit = settings.file_memory_mb * 2**20 // PARSER_BYTES_PER_CHARACTER // 1024
        return FileResult(path, errors=(FileError(
            path, f"too large to check within the per-file memory budget ({settings.file_memory_mb} MB, about"
            f" {limit} KB of source; config `file-memory-mb`, flag `--file-memory-mb`)"),))
    if not judged_by_libcst and _quick_finds_nothing(source, path, settings, tree):
        return FileResult(path)
    try:
        module = PARSED.tree(path, source)  # shared with this process's importers of `path`
    except cst.ParserSyntaxError as exc:
        if judged_by_libcst:
            diagnostic = ParseError.from_newer_syntax_error(exc, path, settings.target_version, RUNNING)
        else:
            diagnostic = ParseError.from_syntax_error(exc, path)
        return FileResult(path, diagnostics=_reported(diagnostic, settings))
    except RecursionError:
        return FileResult(path, errors=(FileError(path, f"{TOO_DEEP} for the parser"),))
    if judged_by_libcst and not holds:
        return FileResult(path, skipped=True)
    try:
        diagnostics = _check(module, source, path, settings)
    except RecursionError:
        return FileResult(path, errors=(FileError(path, f"{TOO_DEEP} to analyse"),))
    return FileResult(path, diagnostics=diagnostics)


def _quick_finds_nothing(source: str, path: str, settings: Settings, tree: ast.Module | None = None) -> bool:
    """The analysis of the file's quick tree finds no hazard: a tree built
    from CPython's parse (`tree` when given; `analysis.quick_tree`, a third
    of libcst's cost) of the file's thin text (`analysis.thin`), or of its
    whole text when nothing would be left out. Anything else (a hazard,
    syntax the quick tree does not build, an analysis error) is left to the
    lint of the whole text, which reports it from libcst's parse of the real
    text; a file this process parsed whole already is linted whole, at no
    parse, and so is an edit of one (the editor's next keystroke in a file
    that had a finding): its parse is the touched statements'
    (`analysis.reparse`)."""
    if PARSED.parsed_before(path):
        return False
    lines = source.count("\n") + 1
    try:
        if not quick_tree.ENABLED:
            thin = thin_source(source, settings)
            return thin is not None and not analyze_module(parse_module(thin), settings, lines=lines, path=path)
        if tree is None:
            tree = python_tree(source)
        module = quick_tree.quick_module(source, tree, left_out(source, tree, settings))
        return not analyze_module(module, settings, lines=lines, path=path, cache=QUICK_CACHE)
    except Exception:  # noqa: BLE001 - the whole lint reproduces (and reports) whatever this was
        return False


@dataclass(frozen=True)
class _Refusal:
    """CPython refuses the text: TL900 as it says, unless `for_libcst` (its
    parser refused the text of a file written for a newer Python)."""

    diagnostic: Diagnostic
    for_libcst: bool = False


def _python_verdict(source: str, path: str, target: PythonVersion, want_tree: bool
                    ) -> tuple[ast.Module | None, _Refusal | None]:
    """CPython's refusal of `source` (None when it compiles) and, when
    `want_tree` and it compiles, its `ast` tree: parsed once, then compiled
    from the tree, which is what the quick tree is built from (a quarter
    less than parsing the text twice: 6.4 s against 8.5 s on diffusers,
    detectron2 and Lightning). Whatever the tree's compile raises is
    judged again from the text, as `python prog.py` would see it."""
    if want_tree:
        try:
            with _as_python_compiles():
                tree = python_tree(source)
                compile(tree, path, "exec", dont_inherit=True)
            return tree, None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    return None, _python_refusal(source, path, target)


def _python_refusal(source: str, path: str, target: PythonVersion) -> _Refusal | None:
    """CPython's refusal to compile `source`; None when it compiles."""
    try:
        with _as_python_compiles():
            compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        diagnostic = ParseError.from_python_error(exc, source_lines(source), path)
        return _Refusal(diagnostic, for_libcst=target > RUNNING and _newer_python_may_parse(source, exc))
    except RecursionError:
        return _Refusal(ParseError.refused("too deeply nested for CPython's compiler", path))
    except MemoryError:
        # CPython's parser reports a full parser stack as MemoryError.
        return _Refusal(ParseError.refused("too deeply nested (or too large) for CPython's parser", path))
    except ValueError:
        return None  # NUL bytes: reading the file reports these
    return None


def _newer_python_may_parse(source: str, error: SyntaxError) -> bool:
    """Is `error` CPython's parser refusing `source` for its grammar, which a
    newer Python's may accept? Not when the parse succeeds (the compiler's
    checks refused it) or its tokenizer's (a nesting limit, a NUL byte)."""
    if str(error.msg).startswith(_REFUSED_BY_EVERY_PYTHON):
        return False
    try:
        with _as_python_compiles():
            compile(source, "<tapelint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError:
        return True
    except (RecursionError, MemoryError, ValueError):
        return False
    return False


def _reported(diagnostic: Diagnostic, settings: Settings) -> tuple[Diagnostic, ...]:
    """The TL900 `diagnostic`, or nothing when TL900 is off."""
    return (diagnostic,) if settings.enabled(ParseError.code) else ()


@contextmanager
def _as_python_compiles() -> Iterator[None]:
    """Compile as `python prog.py` would: under its recursion limit, with
    its warnings (invalid escapes etc.) silenced: not ours to print."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.setrecursionlimit(previous)


def _check(module: cst.Module, source: str, path: str, settings: Settings) -> tuple[Diagnostic, ...]:
    names = ModuleNames(module)  # one index of the module for placing hazards and building fixes
    located = analyze_module(module, settings, lines=source.count("\n") + 1, path=path, names=names)
    if not located:
        return ()
    positions: Positions = {module: StatementPositions(module, source, names)}

    def range_of(node: cst.CSTNode) -> Range:
        # Positions cost a code generation pass, so they are computed only
        # for files that have something to report, once per top-level statement.
        code_range = positions_in(module, positions)[node]
        return Range.of(
            code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column
        )

    ctx = ReportContext(path=path, module=module, range_of=range_of, names=names, text=source)
    found: dict[tuple, Diagnostic] = {}
    for rule_class in ALL_RULES:
        if not settings.enabled(rule_class.code):
            continue
        rule = rule_class()
        for item in located:
            placed = replace(ctx, origins=item.origins) if item.origins else ctx
            # Under --semantics torch, a reuse that only a strict tape rejects is not reported.
            for diagnostic in rule.check((item.hazard,), placed, settings.semantics):
                diagnostic = with_origins(diagnostic, item.origins, path, positions)
                found.setdefault((diagnostic.code, diagnostic.range), diagnostic)
    return tuple(sorted(found.values(), key=lambda d: d.sort_key))
