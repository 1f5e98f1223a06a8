"""Detach the shared value on the branch of the loss that must not train
its producer (TL002, the GAN fix), chosen by role (`fixes.roles`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis.findings import SharedHazard
from tapelint.analysis.model import BackwardEvent
from tapelint.analysis.names import calls_in
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_statement, builder, guarded, siblings
from tapelint.fixes.reach import reaches_leaf_without
from tapelint.fixes.roles import loss_role, producer

_NO_BRANCH: Optional[BackwardEvent] = None


@guarded(_NO_BRANCH)
def detached_branch(hazard: SharedHazard, ctx: SourceContext) -> Optional[BackwardEvent]:
    """The backward whose loss gets the detach. With `fake = G(z)`: the loss
    after whose backward an optimizer not over `G` steps (the
    discriminator's), whichever of the two runs first; never a loss whose
    optimizer steps `G`. When neither backward is followed by a known
    optimizer's step (one optimizer over everything, or none), the first
    loss, as before: then the fix only says which loss stops reaching it."""
    first, second = hazard.first_backward, hazard.fails_at
    maker = producer(ctx, hazard.definition)
    if maker is None:
        return first
    trains_first = loss_role(ctx, first.call).trains(maker)
    trains_second = loss_role(ctx, second.call).trains(maker)
    if trains_first is False:
        return first
    if trains_second is False:
        return second
    if trains_first is None and trains_second in (None, True):
        return first
    return None  # both train the producer: detaching either stops one of its losses


def loss_name(event: BackwardEvent) -> Optional[str]:
    """`d_loss` of `d_loss.backward()`."""
    root = event.call.func.value if isinstance(event.call.func, cst.Attribute) else None
    return root.value if isinstance(root, cst.Name) else None


@builder
def branch_detach_edits(hazard: SharedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`d_loss = bce(D(fake), zeros)` -> `bce(D(fake.detach()), zeros)`: the
    shared name, where the chosen backward's loss is assigned (the nearest
    assignment before that backward, in its block), passed to a call of a
    name or `self.` attribute. Only when that loss still reaches a trainable
    leaf without the shared value (a bare `h.sum()` would not: no edit)."""
    event = detached_branch(hazard, ctx)
    if event is None or not hazard.value.isidentifier():
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
