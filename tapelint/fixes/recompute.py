"""Compute the value inside the loop (TL001, and TL004's loop flavour)."""

from __future__ import annotations

from typing import Union

import libcst as cst

from tapelint.analysis.findings import HoistedHazard, RepeatedHazard
from tapelint.analysis.names import bound_in, names_in
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, delete_statement, insert_before, siblings, sole_statement
from tapelint.fixes.reach import built_within


@builder
def recompute_edits(hazard: Union[HoistedHazard, RepeatedHazard], ctx: SourceContext) -> tuple[Edit, ...]:
    """Move the statement that creates the value into the top of the loop body
    (copy it there when the names it binds are also read elsewhere).

    Only when that is the same computation: one plain assignment to names,
    just before the loop in the same block; the loop reads what it binds; no
    name it reads is rebound between it and the loop or inside the loop; and
    the loop does not rebind what it binds (that would be carried state);
    and the statement builds the value's whole graph from leaves (what it
    reads of a tracked value built elsewhere would still be walked again)."""
    loop = hazard.loop
    if loop is None or loop.implicit or not isinstance(loop.node, (cst.For, cst.While)):
        return ()
    if not isinstance(loop.node.body, cst.IndentedBlock):
        return ()
    statement = sole_statement(ctx, hazard.definition)
    if statement is None or not isinstance(statement.body[0], cst.Assign):
        return ()
    assign = statement.body[0]
    targets = bound_in(assign)
    if not targets or any(not _plain_target(t.target) for t in assign.targets):
        return ()
    body, index = siblings(ctx, statement)
    loop_index = next((i for i, s in enumerate(body) if s is loop.node), -1)
    if index < 0 or loop_index <= index:
        return ()
    between = body[index + 1 : loop_index]
    rebound = set().union(*(bound_in(s) for s in between), bound_in(loop.node))
    if not (targets & names_in(loop.node.body)) or (names_in(assign.value) & rebound) or (targets & rebound):
        return ()
    if not built_within(hazard.fails_at, hazard.definition, lambda site: ctx.names.within(site, statement)):
        return ()
    code = ctx.module.code_for_node(assign)
    move = not ctx.names.used_outside(targets, (statement, loop.node.body))
    comment = statement.trailing_whitespace.comment
    if move and comment is not None:
        code += f"  {comment.value}"
    first = loop.node.body.body[0]
    edits = [insert_before(ctx, first, [code])]
    if move:
        edits.insert(0, delete_statement(ctx, statement))
    return tuple(edits)


def _plain_target(target: cst.BaseAssignTargetExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements)
