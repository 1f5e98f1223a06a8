"""TL002 shared-ancestor-backward."""

from __future__ import annotations

from tapelint.analysis.findings import HazardKind, SharedHazard
from tapelint.diagnostics import Diagnostic, FixKind, Safety
from tapelint.fixes.branch_detach import branch_detach_edits, detached_branch, loss_name
from tapelint.fixes.combine import combine_edits
from tapelint.fixes.edits import fix_of
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, reuse_related, semantics_note


class SharedAncestorBackward(Rule[SharedHazard]):
    """
    ## What it does
    Finds two backward roots that share a tracked non-leaf ancestor and are
    backwarded one after the other, the earlier one without
    `retain_graph=True`: multi-task losses backwarded one by one, or a GAN's
    `fake = G(z)` reused by the discriminator's and the generator's loss.

    ## Why is this bad
    The first backward frees the shared part of the graph; the second walks
    into it and fails. Under PyTorch only if a shared node saved tensors
    (`z = a + b` shared alone is fine there); a strict tape rejects it always.

    ## Fix safety
    Combining the losses (`(l1 + l2).backward()`) gives bit-identical
    gradients and walks the shared part once, but changes where the
    gradients are read in between, so it is unsafe; it has an edit only when
    the backwards are consecutive statements of one block (nothing reads the
    gradients in between). Detaching the shared value on one loss's branch
    changes which parameters get gradients (unsafe too). The loss is chosen
    by role: with `fake = G(z)`, the loss after whose backward an optimizer
    not over `G` steps (`opt_d`, the discriminator's), whether it runs first
    or second; never a loss whose optimizer steps `G` (the generator would
    silently stop learning); the first loss when no optimizer tells. It has
    an edit where that loss is assigned in the same block and passes the
    shared name straight to a call of a name or `self.` attribute (`D(fake)`
    -> `D(fake.detach())`, the GAN fix), and that loss still reaches a
    trainable leaf without the shared value. Otherwise both are suggestions
    only.
    """

    code = "TL002"
    name = "shared-ancestor-backward"
    summary = "two losses sharing part of the graph are backwarded one after the other"
    hazard_kinds = frozenset({HazardKind.SHARED})
    invalid = (
        Invalid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h * 2).sum()
l1.backward()
l2.backward()
""",
            line=7,
            torch="fails 7 node 3",
            strict="fails 7 node 3",
        ),
    )
    valid = (
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h * 2).sum()
(l1 + l2).backward()
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([3.0, 4.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h.detach() * w).sum()
l1.backward()
l2.backward()
""",
            torch="ok",
            strict="ok",
        ),
    )

    def report(self, hazard: SharedHazard, ctx: ReportContext) -> Diagnostic:
        name = hazard.value
        first = ctx.line_of(hazard.first_backward.call)
        fails = ctx.line_of(hazard.fails_at.call)
        message = (
            f"`{name}` (line {ctx.line_of(hazard.definition)}) is shared by the backward at line {first} and "
            f"the one at line {fails}; the first frees it, so the second fails. Add the losses and backward "
            f"once, or detach `{name}` on the branch that must not reach it." + semantics_note(hazard)
        )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.fails_at.call,
            message=message,
            related=reuse_related(hazard, ctx),
            fixes=(
                fix_of(FixKind.COMBINE, Safety.UNSAFE, "add the losses and call backward once",
                       combine_edits(hazard, ctx)),
                fix_of(FixKind.DETACH, Safety.UNSAFE, _detach_description(hazard, ctx),
                       # A retained first walk was meant to reach `name`: detaching it there
                       # would silently drop the gradients the code reads in between.
                       () if hazard.retained else branch_detach_edits(hazard, ctx)),
            ),
        )


def _detach_description(hazard: SharedHazard, ctx: ReportContext) -> str:
    """Names the loss the detach goes to (chosen by role: see `fixes.branch_detach`)."""
    event = detached_branch(hazard, ctx)
    loss = loss_name(event) if event is not None else None
    if loss is None:
        return (f"detach `{hazard.value}` on the branch of the loss that must not train what computes it"
                " (that loss then gives it no gradient)")
    return f"detach `{hazard.value}` where `{loss}` uses it (`{loss}` then gives it no gradient)"
