"""Move an optimizer step after the backward that needs the old weights (TL007)."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.findings import StaleHazard
from tapelint.diagnostics import Edit, Range
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_statement, builder, delete_statement, indent, siblings, sole_statement


@builder
def reorder_step_edits(hazard: StaleHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """Delete `opt.step()` and put it after the failing backward, when both
    are statements of one block of the scope the finding is reported in, the step is a bare `name.step()`, the
    statements between them are simple ones that do not name the optimizer
    (nothing in between can then depend on the step having run), and no
    `retain_graph=True` kept the graph (the reordered code then runs under
    both semantics)."""
    call = hazard.step.call
    if type(call) is not cst.Call:
        return ()  # an update by hand: where it may go is the user's decision
    if hazard.kept_by is not None:
        return ()  # the graph is kept by retain_graph=True: a strict tape would still reject the reordered code
    if hazard.step_site is not call or hazard.fails_site is not hazard.fails_at.call:
        return ()  # the step or the backward runs inside a helper: moving it is a rewrite of that helper
    func = call.func
    if call.args or type(func) is not cst.Attribute or type(func.value) is not cst.Name:
        return ()
    step = sole_statement(ctx, call)
    fails = backward_statement(ctx, hazard.fails_at.call)
    if step is None or fails is None:
        return ()
    body, at = siblings(ctx, step)
    later, end = siblings(ctx, fails)
    if body is not later or not 0 <= at < end:
        return ()
    optimizer = func.value.value
    for statement in body[at + 1:end]:
        if not isinstance(statement, cst.SimpleStatementLine) or _names(statement, optimizer):
            return ()
    after = ctx.range_of(fails).end.line + 1
    moved = Edit(Range.of(after, 0, after, 0), f"{indent(ctx, fails)}{ctx.code_of(call)}\n")
    return (delete_statement(ctx, step), moved)


def _names(statement: cst.CSTNode, name: str) -> bool:
    """Does `statement` use the name `name`?"""
    finder = _NameFinder(name)
    statement.visit(finder)
    return finder.found


class _NameFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> None:
        self.found = self.found or node.value == self.name
