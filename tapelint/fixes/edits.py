"""Editing primitives shared by the fix kinds.

Edits are text ranges from libcst positions, kept minimal so that everything
around them (formatting, comments) stays byte for byte. A builder returns the
edits of a fix when the rewrite is mechanical and correct for every shape it
accepts, and `()` otherwise: `fix_of` then turns the fix into a display-only
suggestion, so what `--fix` applies is exactly what was checked here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Optional, TypeVar

import libcst as cst

from tapelint.diagnostics import Edit, Fix, FixKind, Range, Safety
from tapelint.fixes.context import SourceContext

T = TypeVar("T")


def fix_of(kind: FixKind, safety: Safety, description: str, edits: tuple[Edit, ...]) -> Fix:
    """A fix with edits, or (no mechanical edit) a display-only suggestion."""
    return Fix(kind, safety if edits else Safety.DISPLAY_ONLY, description, edits)


def guarded(fallback: T) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A fix computation that fails on a shape it did not foresee gives
    `fallback` (no edit, a conservative verdict): one fix can never cost the
    file its diagnostics."""

    def wrap(compute: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(compute)
        def safe(*args: object) -> T:
            try:
                return compute(*args)
            except Exception:  # noqa: BLE001 - whatever one fix trips on is that fix's alone
                return fallback

        return safe

    return wrap


NO_EDITS: tuple[Edit, ...] = ()
# The decorator of every edit builder: `(hazard, ctx) -> edits`, or none.
builder = guarded(NO_EDITS)


def sole_statement(ctx: SourceContext, node: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    """The statement line that holds `node` and nothing else on its line."""
    line = ctx.names.ancestor(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.SimpleStatementSuite))
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def siblings(ctx: SourceContext, statement: cst.CSTNode) -> tuple[Sequence[cst.BaseStatement], int]:
    """The statements of the block holding `statement`, and its index there."""
    block = ctx.names.parent(statement)
    if not isinstance(block, (cst.Module, cst.IndentedBlock)):
        return (), -1
    body = block.body
    return body, next(i for i, s in enumerate(body) if s is statement)


def indent(ctx: SourceContext, statement: cst.CSTNode) -> str:
    line = ctx.lines[ctx.line_of(statement) - 1]
    return line[: len(line) - len(line.lstrip(" \t"))]


def insert_before(ctx: SourceContext, statement: cst.BaseStatement, lines: Sequence[str]) -> Edit:
    """Insert whole lines above `statement` and its leading comments, at its indentation."""
    prefix = indent(ctx, statement)
    line = ctx.line_of(statement) - len(getattr(statement, "leading_lines", ()))
    text = "".join(f"{prefix}{text}\n" for text in lines)
    return Edit(Range.of(line, 0, line, 0), text)


def delete_statement(ctx: SourceContext, statement: cst.SimpleStatementLine) -> Edit:
    """Delete a statement's lines (with its trailing comment); `pass` if it is alone in its block."""
    body, _ = siblings(ctx, statement)
    at = ctx.range_of(statement)
    if len(body) == 1:
        return Edit(at, "pass")
    return Edit(Range.of(at.start.line, 0, at.end.line + 1, 0), "")


def is_atom(node: cst.CSTNode) -> bool:
    """Can `.method()` follow it without parentheses?"""
    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or bool(getattr(node, "lpar", ()))


def quoted_method_call(text: str, method: str) -> str:
    """`text.method()` for a message, parenthesised as Python needs:
    `(total / n).item()`, never `total / n.item()`."""
    try:
        expr = cst.parse_expression(text)
    except (cst.ParserSyntaxError, RecursionError):
        return f"({text}).{method}()"
    return f"{text}.{method}()" if is_atom(expr) else f"({text}).{method}()"


def method_call_text(ctx: SourceContext, node: cst.CSTNode, method: str) -> str:
    """`node.method()`, parenthesised when needed."""
    code = ctx.code_of(node)
    return f"{code}.{method}()" if is_atom(node) else f"({code}).{method}()"


def backward_call(statement: cst.CSTNode) -> Optional[cst.Call]:
    """The `x.backward(...)` call that is the whole of `statement`, if it is one."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    expr = statement.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        return None
    func = expr.value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward":
        return expr.value
    return None


def backward_statement(ctx: SourceContext, call: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    """The statement line that is exactly the backward `call`."""
    statement = ctx.names.parent(ctx.names.parent(call) or call)
    if isinstance(statement, cst.SimpleStatementLine) and backward_call(statement) is call:
        return statement
    return None
