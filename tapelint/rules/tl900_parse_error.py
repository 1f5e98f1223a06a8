"""TL900 parse-error."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from tapelint.diagnostics import Diagnostic, Range, Semantics, Severity
from tapelint.rules.base import Rule
from tapelint.settings import PythonVersion

# libcst's native parser reports `raw_line`/`raw_column` as the start of the
# statement (column always 0, tokenizer errors always at line 1); the real
# position is only in its message, e.g. "parser error: error at 3:7: expected one of ...".
_LIBCST_POSITION = re.compile(r"error at (\d+):(\d+)")


@dataclass(frozen=True)
class _Located:
    line: int  # 1-based
    column: int  # 0-based
    end_column: int
    message: str


class ParseError(Rule):
    """
    ## What it does
    Reports a file that is not valid Python, at the position the parser gave up.

    The Python tapelint runs on judges, with its `compile()`: syntax errors,
    compile-time errors (`'return' outside function`) and nesting too deep
    for it. When the file is written for a newer Python (`target-version`,
    else the lower bound of `requires-python`), what the running Python's
    parser refuses for its grammar is judged by libcst's parser instead,
    which knows the newer syntax (`def f[T]()` on 3.11 for 3.12): a file it
    parses is checked, one it refuses is reported with its error.

    ## Why is this bad
    A file that cannot be parsed cannot be checked: any hazard in it goes
    unseen. tapelint reports it and goes on with the other files.
    """

    code = "TL900"
    name = "parse-error"
    summary = "the file cannot be parsed"

    @staticmethod
    def from_syntax_error(exc: cst.ParserSyntaxError, path: str) -> Diagnostic:
        """TL900 for a libcst failure. `_lines` is the source libcst parsed (it
        is part of the exception's pickled state); CPython's parser gives a far
        better message and position for the same text, so it is asked first."""
        lines: list[str] = list(exc._lines)
        verdict = _cpython_verdict(lines)
        if isinstance(verdict, SyntaxError):
            return ParseError.from_python_error(verdict, lines, path)
        located = _from_libcst(exc, lines)
        prefix = "syntax not supported by libcst (Python accepts it)" if verdict is _ACCEPTED else "syntax error"
        return _diagnostic(located, f"{prefix}: {located.message}", path)

    @staticmethod
    def from_newer_syntax_error(exc: cst.ParserSyntaxError, path: str, target: PythonVersion,
                                running: PythonVersion) -> Diagnostic:
        """TL900 for a libcst failure on a text the `running` Python refused
        and `target` may accept: libcst's own position and message (the
        running Python's would be about syntax that is valid on the target)."""
        located = _from_libcst(exc, list(exc._lines))
        return _diagnostic(located, f"syntax error: {located.message} (libcst's parser: target-version {target}"
                                    f" is newer than the running Python {running.dotted})", path)

    @staticmethod
    def from_python_error(exc: SyntaxError, lines: Sequence[str], path: str) -> Diagnostic:
        """TL900 for CPython's own SyntaxError on `lines` (the source's lines)."""
        located = _from_cpython(exc, lines)
        return _diagnostic(located, f"syntax error: {located.message}", path)

    @staticmethod
    def refused(reason: str, path: str) -> Diagnostic:
        """TL900 for a file CPython refuses without a position (nesting too
        deep for its parser or compiler): reported on the first line."""
        return _diagnostic(_Located(1, 0, 0, reason), f"CPython cannot compile this file: {reason}", path)


def _diagnostic(located: _Located, message: str, path: str) -> Diagnostic:
    return Diagnostic(
        code=ParseError.code,
        name=ParseError.name,
        severity=Severity.ERROR,
        message=message,
        path=path,
        range=Range.of(located.line, located.column, located.line, located.end_column),
        fails_under=(Semantics.TORCH, Semantics.STRICT),
    )


_ACCEPTED = object()


def _cpython_verdict(lines: list[str]) -> SyntaxError | object | None:
    """CPython's SyntaxError for the text, `_ACCEPTED` when CPython compiles
    it, None when CPython cannot judge (too deep, NUL bytes, no position)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. must not reach stderr
            compile("\n".join(lines) + "\n", "<tapelint>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc if exc.lineno else None
    except (ValueError, RecursionError, MemoryError):
        return None
    return _ACCEPTED


def _from_cpython(exc: SyntaxError, lines: Sequence[str]) -> _Located:
    line = min(max(exc.lineno or 1, 1), max(len(lines), 1))
    text = lines[line - 1] if lines else ""
    column = min(max((exc.offset or 1) - 1, 0), len(text))
    end = (exc.end_offset or 0) - 1 if exc.end_lineno == exc.lineno else -1
    end_column = min(end, len(text)) if end > column else min(column + 1, len(text))
    return _Located(line, column, max(end_column, column), _one_line(exc.msg))


def _from_libcst(exc: cst.ParserSyntaxError, lines: list[str]) -> _Located:
    """libcst's position from its message, and its message without the long
    list of expected tokens."""
    message = _one_line(exc.message)
    match = _LIBCST_POSITION.search(message)
    line, column = (int(match[1]), int(match[2])) if match else (exc.raw_line, exc.raw_column)
    line = min(max(line, 1), max(len(lines), 1))
    text = lines[line - 1] if lines else ""
    column = min(max(column, 0), len(text))
    message = re.sub(r"^(parser|tokenizer) error: (error at \d+:\d+: )?", "", message)
    message = re.sub(r"expected one of .*", "unexpected token", message) or "invalid syntax"
    return _Located(line, column, min(column + 1, len(text)), message)


def _one_line(text: str) -> str:
    first = str(text).strip().splitlines()
    return first[0] if first else "invalid syntax"
