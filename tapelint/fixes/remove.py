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
    assigned `g = torch.autograd.grad(...)` is kept: its result is used)."""
    if hazard.first_backward is hazard.fails_at:
        return ()
    call = hazard.fails_at.call
    expr = ctx.names.parent(call)
    statement = ctx.names.parent(expr) if isinstance(expr, cst.Expr) else None
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return ()
    return (delete_statement(ctx, statement),)
