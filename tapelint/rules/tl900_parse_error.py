"""TL900 parse-error."""

from __future__ import annotations

import libcst as cst

from tapelint.diagnostics import Diagnostic, Range, Semantics, Severity
from tapelint.rules.base import Rule


class ParseError(Rule):
    """
    ## What it does
    Reports a file that is not valid Python, at the position the parser gave up.

    ## Why is this bad
    A file that cannot be parsed cannot be checked: any hazard in it goes
    unseen. tapelint reports it and goes on with the other files.
    """

    code = "TL900"
    name = "parse-error"
    summary = "the file cannot be parsed"

    @staticmethod
    def from_syntax_error(exc: cst.ParserSyntaxError, path: str) -> Diagnostic:
        line = max(exc.raw_line, 1)
        column = max(exc.raw_column, 0)
        first_line = str(exc.message).strip().splitlines()[0] if str(exc.message).strip() else "syntax error"
        return Diagnostic(
            code=ParseError.code,
            name=ParseError.name,
            severity=Severity.ERROR,
            message=f"cannot parse: {first_line}",
            path=path,
            range=Range.of(line, column, line, column),
            fails_under=(Semantics.TORCH, Semantics.STRICT),
        )
