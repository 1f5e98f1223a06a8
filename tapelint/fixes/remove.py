"""Remove the repeated backward (TL004)."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.findings import RepeatedHazard
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, delete_statement


@builder
def remove_edits(hazard: RepeatedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """Delete the failing backward when it is a statement of its own (an
    assigned `g = torch.autograd.grad(...)` is kept: its result is used),
    and only when every run that reaches it ran the first backward: the
    first sits in the same block or in one enclosing it. Under `if old:
    loss.backward()` / `if not old: loss.backward()` the two may be
    exclusive (the analysis does not tell conditions apart), and deleting
    one would leave a path with no backward at all."""
    if hazard.first_backward is hazard.fails_at:
        return ()
    call = hazard.fails_at.call
    expr = ctx.names.parent(call)
    statement = ctx.names.parent(expr) if isinstance(expr, cst.Expr) else None
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return ()
    first = ctx.names.ancestor(hazard.first_backward.call, (cst.SimpleStatementLine,))
    if first is None or not ctx.names.within(ctx.names.parent(statement), ctx.names.parent(first)):
        return ()
    return (delete_statement(ctx, statement),)
