"""TL007 stale-graph."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.findings import HazardKind, StaleHazard
from tapelint.diagnostics import Diagnostic, FixKind, Related, Role, Safety
from tapelint.fixes.edits import fix_of
from tapelint.fixes.stale import reorder_step_edits
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, assigned_name, function_of, loop_phrase


class StaleGraph(Rule[StaleHazard]):
    """
    ## What it does
    Finds a backward that walks a graph built before an `optimizer.step()`
    which changed, in place, a parameter that the graph saved for backward:
    a GAN's `d_loss.backward(retain_graph=True); opt_d.step();
    g_loss.backward()` with the generator's loss going through the
    discriminator, a policy loss built from the critic's outputs backwarded
    after the critic stepped, stored rollout values or a recurrent state kept
    with `retain_graph=True` across updates.

    ## Why is this bad
    PyTorch raises `one of the variables needed for gradient computation has
    been modified by an inplace operation`: a layer saves its weight for its
    input's gradient (a convolution or a normalisation always), and the step
    bumped the weight's version. `retain_graph=True` does not help; it kept
    the graph, not the old weights. A strict tape fails as well (its graph
    was consumed, or it saved the old weights too).

    An update by hand counts like a step: `p -= lr * p.grad` or `p.copy_(...)`
    under `no_grad`; one through `.data` (`p.data.add_(...)`, `p.data = ...`)
    does not, since `.data` has its own version counter (PyTorch runs the
    backward, with gradients of the new weights mixed with the old).

    Only a saving use counts: a parameter that the graph only adds (a bias,
    `x + p`) is not saved, and `zero_grad()` modifies no parameter. A
    backward into a graph that an earlier backward already freed is TL002 or
    TL004 instead: PyTorch reports the freed graph first.

    ## Fix safety
    Every fix changes the gradients: calling the step after all backwards
    lets the later loss's gradients reach the stepped parameters' `.grad`
    before the step; recomputing the forward after the step builds the loss
    with the new weights; adding the losses backwards both with the old
    ones. The edit moves the step after the failing backward only when both
    are statements of one block, the step is a bare `name.step()` and the
    statements between them are simple ones that do not name that
    optimizer, and no `retain_graph=True` kept the graph (a strict tape would
    still reject that walk); it is unsafe (the step's gradients now include
    the later loss's). The others are suggestions.
    """

    code = "TL007"
    name = "stale-graph"
    summary = "a backward walks a graph whose saved parameters a step changed in place"
    hazard_kinds = frozenset({HazardKind.STALE})
    invalid = (
        Invalid(
            """\
import torch
import torch.nn as nn
torch.manual_seed(0)
d = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
g = nn.Linear(2, 3)
opt_d = torch.optim.SGD(d.parameters(), lr=0.1)
score = d(g(torch.randn(5, 2)))
d_loss = score.mean()
d_loss.backward(retain_graph=True)
opt_d.step()
g_loss = -score.mean()
g_loss.backward()
""",
            line=12,
            torch="inplace 12",
            strict="fails 12",
        ),
    )
    valid = (
        Valid(
            """\
import torch
import torch.nn as nn
torch.manual_seed(0)
d = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
g = nn.Linear(2, 3)
opt_d = torch.optim.SGD(d.parameters(), lr=0.1)
fake = g(torch.randn(5, 2))
d_loss = d(fake.detach()).mean()
d_loss.backward()
opt_d.step()
g_loss = -d(fake).mean()
g_loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
    )

    def report(self, hazard: StaleHazard, ctx: ReportContext) -> Diagnostic:
        step = hazard.step
        site = hazard.anchor if hazard.anchor is not None else hazard.definition
        value = assigned_name(site, ctx) if hazard.anchor is not None else hazard.value
        backward = hazard.fails_at.call
        through_step = hazard.step_site is not step.call  # the step runs inside a call written here
        here = f"`{abbreviate(ctx.code_of(hazard.step_site))}` at line {ctx.line_of(hazard.step_site)}"
        stepping = f"{here} (through its `{step.label}`)" if through_step else here
        walking = "this backward"
        if hazard.fails_site is not backward:
            walking = (f"the backward this call runs (`{abbreviate(ctx.code_of(backward))}`, "
                       f"line {ctx.line_of(backward)})")
        kept = ""
        if hazard.kept_by is not None:
            kept = (f" retain_graph=True at line {ctx.line_of(hazard.kept_by.call)} kept the graph, "
                    f"not the old weights.")
        carried = f" (carried from the previous iteration of {loop_phrase(hazard, ctx)})" if hazard.loop else ""
        message = (
            f"`{value}` (line {ctx.line_of(site)}){carried} saved parameters of `{hazard.module}` that "
            f"{stepping} changes in place (it updates {step.updates}); {walking} walks `{value}` after the "
            f"step, so PyTorch fails here (\"modified by an inplace operation\").{kept} Step after all backwards, "
            f"recompute the forward after the step, or add the losses and backward once."
        )
        step_text = f"`{abbreviate(ctx.code_of(hazard.step_site))}`"
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.fails_site,
            message=message,
            related=_related(hazard, ctx, site, value),
            fixes=(
                fix_of(FixKind.REORDER, Safety.UNSAFE,
                       f"call {step_text} after this backward (its gradients then include this loss's)",
                       reorder_step_edits(hazard, ctx)),
                fix_of(FixKind.RECOMPUTE, Safety.UNSAFE,
                       f"recompute `{value}` after {step_text} (the loss then uses the new weights)",
                       ()),
                fix_of(FixKind.COMBINE, Safety.UNSAFE, "add the losses and call backward once, before the step", ()),
            ),
        )


def _related(hazard: StaleHazard, ctx: ReportContext, site: cst.CSTNode, value: str) -> tuple[Related, ...]:
    """Where the value is created, the step and the failing backward — in the
    scope the user reads, then the callee lines they ran (`created inside
    `Critic.forward`, line 20`): a call of another module is placed here by
    `analysis.anchors`, which adds that file's own location."""
    step = hazard.step
    related = [Related(Role.DEFINITION, ctx.path, ctx.range_of(site),
                       f"`{value}` is computed here, saving the parameters of `{hazard.module}`")]
    if site is not hazard.definition:
        related.append(Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                               f"created inside `{function_of(hazard.definition, ctx)}`, "
                               f"line {ctx.line_of(hazard.definition)}"))
    if hazard.kept_by is not None:
        related.append(Related(Role.FIRST_BACKWARD, ctx.path, ctx.range_of(hazard.kept_by.call),
                               "this backward kept the graph with retain_graph=True, not the old weights"))
    related.append(Related(Role.STEP, ctx.path, ctx.range_of(hazard.step_site),
                           f"`{abbreviate(ctx.code_of(hazard.step_site))}` changes them in place"))
    if step.call is not hazard.step_site:
        related.append(Related(Role.STEP, ctx.path, ctx.range_of(step.call),
                               f"`{step.label}` inside `{function_of(step.call, ctx)}`, line {ctx.line_of(step.call)}"))
    backward = hazard.fails_at.call
    if backward is not hazard.fails_site:
        related.append(Related(Role.FAILS_AT, ctx.path, ctx.range_of(backward),
                               f"this backward inside `{function_of(backward, ctx)}`, run by the call at line "
                               f"{ctx.line_of(hazard.fails_site)}, needs the old values and fails"))
    else:
        related.append(Related(Role.FAILS_AT, ctx.path, ctx.range_of(backward),
                               "this backward needs the old values and fails"))
    return tuple(related)

