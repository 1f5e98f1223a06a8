"""Add the losses and call backward once (TL002, TL006)."""

from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from tapelint.analysis.findings import RetainHazard, SharedHazard
from tapelint.diagnostics import Edit, Range
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_call, backward_statement, builder, is_atom, siblings


@builder
def combine_edits(hazard: Union[SharedHazard, RetainHazard], ctx: SourceContext) -> tuple[Edit, ...]:
    """`a.backward(retain_graph=True)` / `a.backward()` then `b.backward()` as
    consecutive statements of one block -> `(a + b).backward()`. The chain runs
    from the first backward through the failing one and on, while the last one
    still retains, to the first that does not. No edit when another statement
    or a comment sits in between, or a backward takes any other argument."""
    first, last = hazard.first_backward, hazard.fails_at
    if first is last:
        return ()
    start = backward_statement(ctx, first.call)
    end = backward_statement(ctx, last.call)
    if start is None or end is None:
        return ()
    body, i = siblings(ctx, start)
    end_body, j = siblings(ctx, end)
    if end_body is not body or i < 0 or j <= i:
        return ()  # not in one block (the first inside an `if`, `try` or `case`): not mechanical
    while _retains(backward_call(body[j])):
        j += 1
        if j >= len(body) or backward_call(body[j]) is None:
            return ()
    chain = [s for s in body[i : j + 1] if isinstance(s, cst.SimpleStatementLine)]
    calls = [c for c in map(backward_call, chain) if c is not None]
    if len(calls) != j + 1 - i or any(c.args and not _retains(c) for c in calls):
        return ()
    if any(s.trailing_whitespace.comment is not None for s in chain[:-1]) or any(
        e.comment is not None for s in chain[1:] for e in s.leading_lines
    ):
        return ()
    roots = [c.func.value for c in calls if isinstance(c.func, cst.Attribute)]
    total = " + ".join(ctx.code_of(r) if is_atom(r) else f"({ctx.code_of(r)})" for r in roots)
    at = Range(ctx.range_of(chain[0]).start, ctx.range_of(chain[-1]).end)
    return (Edit(at, f"({total}).backward()"),)


def _retains(call: Optional[cst.Call]) -> bool:
    """Exactly `retain_graph=True` and nothing else."""
    return (
        call is not None
        and len(call.args) == 1
        and call.args[0].keyword is not None
        and call.args[0].keyword.value == "retain_graph"
        and isinstance(call.args[0].value, cst.Name)
        and call.args[0].value.value == "True"
    )
