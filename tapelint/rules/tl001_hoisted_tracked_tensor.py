"""TL001 hoisted-tracked-tensor."""

from __future__ import annotations

from tapelint.analysis.findings import HazardKind, HoistedHazard
from tapelint.diagnostics import Diagnostic, Fix, FixKind, Safety
from tapelint.fixes.detach import definition_detach_edits
from tapelint.fixes.edits import fix_of
from tapelint.fixes.recompute import recompute_edits
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, loop_phrase, reuse_related, semantics_note


class HoistedTrackedTensor(Rule[HoistedHazard]):
    """
    ## What it does
    Finds a tracked, non-leaf tensor computed once outside a loop (or cached
    on `self`, a closure or a global) that a backward inside the loop walks on
    every iteration.

    ## Why is this bad
    The first iteration's backward frees the graph behind the hoisted value
    (its saved tensors under PyTorch, the whole tape under burn). The second
    iteration walks into it again and fails with "Trying to backward through
    the graph a second time". Under PyTorch it fails only if some node of the
    hoisted part saved tensors (`exp`, `*`, `matmul`, any layer); a strict
    tape rejects it always.

    ## Fix safety
    Both fixes are unsafe: `detach()` stops gradients from reaching what the
    value was computed from; recomputing it inside the loop changes the cost
    of every step (and the value, if its inputs change between steps).
    Recomputing is offered first, as it keeps the gradients the code asked
    for, with an edit only when the value is created by one plain assignment
    just before the loop, in the same block, from names that neither the
    loop nor the statements in between rebind: the statement is moved to the
    top of the loop body (copied, when what it binds is also read outside
    the loop), and only when that statement builds the value's whole graph
    from leaves (recomputing `b = a.exp()` where `a` is itself built before
    the loop would walk `a` again). Detaching has an edit only where it
    cannot break the program: the expression is known to be one tensor (not
    a tuple, a list, or what a user function or module returns), every
    backward still reaches a trainable leaf without the value (no graph-free
    root, no model left untrained), and the value is created in the scope
    the user reads (not inside a function the code calls, such as
    `Net.forward`; an `__init__` caching it on `self` is that place).
    Otherwise it is a suggestion only.
    """

    code = "TL001"
    name = "hoisted-tracked-tensor"
    summary = "a tracked value computed outside a loop is backwarded through on every iteration"
    hazard_kinds = frozenset({HazardKind.HOISTED})
    invalid = (
        Invalid(
            """\
import torch
x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = x.exp()
for step in range(3):
    loss = (feats * w).sum()
    loss.backward()
""",
            line=4,
            torch="fails 7 node 4",
            strict="fails 7 node 4",
        ),
        Invalid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
z = x + 1
for step in range(3):
    loss = (z * 2).sum()
    loss.backward()
""",
            line=3,
            semantics="strict",
            torch="ok",
            strict="fails 6 node 3",
        ),
    )
    valid = (
        Valid(
            """\
import torch
x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
for step in range(3):
    feats = x.exp()
    loss = (feats * w).sum()
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = x.exp().detach()
for step in range(3):
    loss = (feats * w).sum()
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
z = x + 1
for step in range(3):
    loss = (z * 2).sum()
    loss.backward()
""",
            torch="ok",
            strict="fails 6 node 3",
        ),
        Valid(
            """\
import torch
x = torch.tensor([0.5, 1.0], requires_grad=True)
with_prior = True
for step in range(3):
    if with_prior:
        prior = x.exp().sum()
    loss = (x * x).sum()
    if with_prior:
        loss = loss + prior
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
    )

    def report(self, hazard: HoistedHazard, ctx: ReportContext) -> Diagnostic:
        name = hazard.value
        defined = ctx.line_of(hazard.definition)
        fails = ctx.line_of(hazard.fails_at.call)
        if hazard.loop is not None and hazard.loop.implicit:
            where = f"outside {loop_phrase(hazard, ctx)}"
            when = "on the first step and fails on the second"
        elif hazard.loop is not None and hazard.loop.node is not None and _inside(hazard, ctx):
            where = f"once and kept across the iterations of {loop_phrase(hazard, ctx)}"
            when = "on the first iteration and fails on the next"
        else:
            where = f"outside {loop_phrase(hazard, ctx)}"
            when = "on the first iteration and fails on the second"
        inside = f"`{hazard.loop.step_function}()`" if hazard.loop is not None and hazard.loop.implicit else "the loop"
        message = (
            f"`{name}` is computed once at line {defined}, {where}; the backward at line {fails} frees it "
            f"{when}. Detach it if it needs no gradient, or compute it inside {inside}."
            + semantics_note(hazard)
        )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.definition,
            message=message,
            related=reuse_related(hazard, ctx),
            fixes=self._fixes(hazard, ctx),
        )

    def _fixes(self, hazard: HoistedHazard, ctx: ReportContext) -> tuple[Fix, ...]:
        """Recompute first when it can be applied: it keeps the gradients."""
        name = hazard.value
        detach = fix_of(FixKind.DETACH, Safety.UNSAFE,
                        f"detach `{name}` where it is created (it then gets no gradient)",
                        definition_detach_edits(hazard, ctx))
        recompute = fix_of(FixKind.RECOMPUTE, Safety.UNSAFE, f"compute `{name}` inside the loop, once per iteration",
                           recompute_edits(hazard, ctx))
        return (recompute, detach) if recompute.edits else (detach, recompute)


def _inside(hazard: HoistedHazard, ctx: ReportContext) -> bool:
    """Was the value created inside the loop's span (a cache filled on the first iteration)?"""
    loop_range = ctx.range_of(hazard.loop.node)
    at = ctx.range_of(hazard.definition)
    return loop_range.start <= at.start and at.end <= loop_range.end
