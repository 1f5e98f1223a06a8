"""TL004 repeated-backward."""

from __future__ import annotations

from tapelint.analysis.findings import HazardKind, RepeatedHazard
from tapelint.diagnostics import Diagnostic, Fix, FixKind, Safety
from tapelint.fixes.edits import fix_of
from tapelint.fixes.recompute import recompute_edits
from tapelint.fixes.remove import remove_edits
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, loop_phrase, reuse_related, semantics_note


class RepeatedBackward(Rule[RepeatedHazard]):
    """
    ## What it does
    Finds the same root backwarded twice: two calls in a row, a loop that
    re-runs a backward on a loss built outside it, or `torch.autograd.grad`
    on a graph that an earlier call already walked without `retain_graph`.

    ## Why is this bad
    The first walk frees the graph; the second fails with "Trying to
    backward through the graph a second time" (under PyTorch when a node of
    it saved tensors, under a strict tape always). Where it runs, the
    gradients silently double.

    ## Fix safety
    Removing the second call is unsafe when the repetition was meant; it
    has an edit when the call is a statement of its own (its lines go, with
    its trailing comment; `pass` if it was alone in its block), not when its
    result is assigned, and only when the first call sits in the same block
    or one enclosing it: two backwards under different conditions (`if
    old: ...` / `if not old: ...`) may be exclusive, and deleting one would
    leave a path without any backward. `retain_graph=True` on the first call is shown,
    never applied: it keeps the whole graph alive and usually hides the real
    bug. When a loop re-runs the backward of a root built before it, there
    is no second call to remove: the fix builds the root inside the loop
    (unsafe, with an edit under the same conditions as TL001's).
    """

    code = "TL004"
    name = "repeated-backward"
    summary = "the same root is backwarded twice"
    hazard_kinds = frozenset({HazardKind.REPEATED})
    invalid = (
        Invalid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x.exp() * x).sum()
loss.backward()
loss.backward()
""",
            line=5,
            torch="fails 5 node 3",
            strict="fails 5 node 3",
        ),
        Invalid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x * x).sum()
for step in range(3):
    loss.backward()
""",
            line=5,
            torch="fails 5 node 3",
            strict="fails 5 node 3",
        ),
    )
    valid = (
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x.exp() * x).sum()
loss.backward(retain_graph=True)
loss.backward()
""",
            torch="ok",
            strict="fails 5 node 3",
        ),
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
for step in range(3):
    loss = (x * x).sum()
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
new_api = False
loss = (x.exp() * x).sum()
if not new_api:
    loss.backward()
if new_api:
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
    )

    def report(self, hazard: RepeatedHazard, ctx: ReportContext) -> Diagnostic:
        name = hazard.value
        fails = ctx.line_of(hazard.fails_at.call)
        if hazard.first_backward is hazard.fails_at:
            message = (
                f"`{name}` is built once at line {ctx.line_of(hazard.definition)}, outside "
                f"{loop_phrase(hazard, ctx)}, and the backward at line {fails} walks it again on every "
                f"iteration: the second iteration fails. Build it inside the loop."
            )
        else:
            message = (
                f"`{name}` was already walked by the backward at line {ctx.line_of(hazard.first_backward.call)}; "
                f"walking it again at line {fails} fails. Remove the second backward, or pass "
                f"retain_graph=True to the first if the repetition is intended."
            )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.fails_at.call,
            message=message + semantics_note(hazard),
            related=reuse_related(hazard, ctx),
            fixes=self._fixes(hazard, ctx),
        )

    def _fixes(self, hazard: RepeatedHazard, ctx: ReportContext) -> tuple[Fix, ...]:
        if hazard.first_backward is hazard.fails_at:
            return (fix_of(FixKind.RECOMPUTE, Safety.UNSAFE, f"build `{hazard.value}` inside the loop",
                           recompute_edits(hazard, ctx)),)
        return (
            fix_of(FixKind.REMOVE, Safety.UNSAFE, "remove the repeated backward", remove_edits(hazard, ctx)),
            Fix(FixKind.RETAIN_GRAPH, Safety.DISPLAY_ONLY,
                "pass retain_graph=True to the first backward if walking twice is intended "
                "(keeps the whole graph alive; gradients accumulate)"),
        )
