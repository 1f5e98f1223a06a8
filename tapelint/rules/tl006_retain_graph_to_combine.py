"""TL006 retain-graph-to-combine."""

from __future__ import annotations

from tapelint.analysis.findings import HazardKind, RetainHazard
from tapelint.diagnostics import Diagnostic, FixKind, Related, Role, Safety, Semantics
from tapelint.fixes.combine import combine_edits
from tapelint.fixes.edits import fix_of
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid


class RetainGraphToCombine(Rule[RetainHazard]):
    """
    ## What it does
    Finds `retain_graph=True` whose only purpose is to backward several
    losses that share a graph in a row, with nothing in between that reads
    or applies the gradients. A chain of such backwards is one finding, at
    the first `retain_graph=True`. Reported under `--semantics strict`: PyTorch
    runs it, but a strict tape (burn) has no `retain_graph`, so code being
    ported must combine the losses.

    ## Why is this bad
    Adding the losses and calling backward once gives bit-identical
    gradients (they accumulate either way), walks the shared part of the
    graph once instead of once per loss, and frees the graph at the end
    instead of keeping it alive. On a strict tape the second backward fails.

    ## Fix safety
    Combining is unsafe when the code between the backwards depends on the
    partial gradients; tapelint only reports when nothing in between steps
    an optimizer, zeroes or reads gradients. The edit replaces the whole
    chain by `(l1 + l2 + ...).backward()` only when its backwards are
    consecutive statements of one block with no comment in between, each
    taking no argument but `retain_graph=True`; otherwise it is a suggestion.
    """

    code = "TL006"
    name = "retain-graph-to-combine"
    summary = "retain_graph=True is used where adding the losses would do"
    hazard_kinds = frozenset({HazardKind.RETAIN_TO_COMBINE})
    invalid = (
        Invalid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h * 2).sum()
l1.backward(retain_graph=True)
l2.backward()
""",
            line=6,
            semantics="strict",
            torch="ok",
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
            semantics="strict",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x.exp()
l1 = h.sum()
l2 = (h * 2).sum()
l1.backward(retain_graph=True)
l2.backward()
""",
            torch="ok",
            strict="fails 7 node 3",
        ),
    )

    def fails_under(self, hazard: RetainHazard) -> tuple[Semantics, ...]:
        """PyTorch runs a retained graph; only a strict tape has no retain_graph."""
        return (Semantics.STRICT,)

    def report(self, hazard: RetainHazard, ctx: ReportContext) -> Diagnostic:
        first = ctx.line_of(hazard.first_backward.call)
        second = ctx.line_of(hazard.fails_at.call)
        message = (
            f"retain_graph=True at line {first} only serves the backward at line {second}, whose loss shares "
            f"`{hazard.value}` with this one: add the losses and backward once. The gradients are "
            f"bit-identical and the shared part is walked once; a strict tape (burn) has no retain_graph, "
            f"so there the second backward fails."
        )
        anchor = hazard.retain_arg if hazard.retain_arg is not None else hazard.first_backward.call
        return self.diagnostic(
            hazard,
            ctx,
            anchor=anchor,
            message=message,
            related=(
                Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                        f"`{hazard.value}` is shared by both losses"),
                Related(Role.FIRST_BACKWARD, ctx.path, ctx.range_of(hazard.first_backward.call),
                        "keeps the graph for the next backward"),
                Related(Role.FAILS_AT, ctx.path, ctx.range_of(hazard.fails_at.call),
                        "fails here on a strict tape"),
            ),
            fixes=(
                fix_of(FixKind.COMBINE, Safety.UNSAFE, "add the losses and call backward once",
                       combine_edits(hazard, ctx)),
            ),
        )
