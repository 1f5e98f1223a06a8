"""Detach the shared value on the first loss's branch (TL002, the GAN fix)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis.findings import SharedHazard
from tapelint.analysis.names import calls_in
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_statement, builder, siblings


@builder
def branch_detach_edits(hazard: SharedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`d_loss = bce(D(fake), zeros)` -> `bce(D(fake.detach()), zeros)`: the
    shared name, where the first backward's loss is assigned (the nearest
    assignment before that backward, in its block), passed to a call of a
    name or `self.` attribute. Such a call is taken to be a module with its
    own parameters, so the first loss still reaches parameters after the
    detach (a bare `h.sum()` would not: no edit there)."""
    first = hazard.first_backward
    if not hazard.value.isidentifier():
        return ()
    statement = backward_statement(ctx, first.call)
    if statement is None:
        return ()
    root = first.call.func.value if isinstance(first.call.func, cst.Attribute) else None
    if not isinstance(root, cst.Name):
        return ()
    body, index = siblings(ctx, statement)
    assign = next((a for a in map(_single_assign, reversed(body[:index])) if a is not None and a[0] == root.value), None)
    if assign is None:
        return ()
    edits = []
    for call in calls_in(assign[1]):
        func = call.func
        module_call = isinstance(func, cst.Name) or (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
        )
        for arg in call.args if module_call else ():
            if arg.keyword is None and isinstance(arg.value, cst.Name) and arg.value.value == hazard.value:
                edits.append(Edit(ctx.range_of(arg.value), f"{hazard.value}.detach()"))
    return tuple(edits)


def _single_assign(statement: cst.BaseStatement) -> Optional[tuple[str, cst.BaseExpression]]:
    """(name, value) of `name = value` alone on its line."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        assign = statement.body[0]
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value, assign.value
    return None
