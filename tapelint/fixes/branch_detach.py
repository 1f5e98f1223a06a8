"""Detach the shared value on the branch of the loss that must not train
its producer (TL002, the GAN fix), chosen by the role the analysis gave
each loss (`analysis.updates`: which parameters the optimizer stepped after
its backward updates, and whether the loss reaches them only through the
shared sample), never by how anything is spelled."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis.findings import SharedHazard
from tapelint.analysis.model import BackwardEvent
from tapelint.analysis.names import calls_in
from tapelint.analysis.updates import BranchRole
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_statement, builder, guarded, siblings
from tapelint.fixes.reach import reaches_leaf_without

_NO_BRANCH: Optional[BackwardEvent] = None


@guarded(_NO_BRANCH)
def detached_branch(hazard: SharedHazard, ctx: SourceContext) -> Optional[BackwardEvent]:
    """The backward whose loss gets the detach: the first of the two whose
    role is `DETACHABLE` (its optimizer steps only parameters it reaches
    without the sample: the discriminator's loss), whichever runs first.
    None when neither is (no step after either, one optimizer over
    everything, or the generator's own loss): then no loss is named."""
    for event, role in zip((hazard.first_backward, hazard.fails_at), hazard.roles):
        if role is BranchRole.DETACHABLE:
            return event
    return None


def loss_name(event: BackwardEvent) -> Optional[str]:
    """`d_loss` of `d_loss.backward()`."""
    root = event.call.func.value if isinstance(event.call.func, cst.Attribute) else None
    return root.value if isinstance(root, cst.Name) else None


@builder
def branch_detach_edits(hazard: SharedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`d_loss = bce(D(fake), zeros)` -> `bce(D(fake.detach()), zeros)`: the
    shared name, where the chosen backward's loss is assigned (the nearest
    assignment before that backward, in its block), passed to a call of a
    name or `self.` attribute. Only when the analysis bound the shared name
    to tensors alone (a `Generator` whose `forward` returns a tuple or a
    dict, or one nobody knows, gets no edit: `.detach()` would raise there),
    and when that loss still reaches a trainable leaf without the shared
    value (a bare `h.sum()` would not: no edit)."""
    event = detached_branch(hazard, ctx)
    if event is None or not hazard.sample_shape.tensor or not hazard.value.isidentifier():
        return ()
    statement = backward_statement(ctx, event.call)
    name = loss_name(event)
    if statement is None or name is None:
        return ()
    if not reaches_leaf_without(event, hazard.definition):
        return ()
    body, index = siblings(ctx, statement)
    assign = next((a for a in map(_single_assign, reversed(body[:index])) if a is not None and a[0] == name), None)
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
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 \
                and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value, assign.value
    return None
