"""TL005 carried-tracked-state."""

from __future__ import annotations

from typing import Optional

from tapelint.analysis.findings import CarriedHazard, HazardKind
from tapelint.diagnostics import Diagnostic, FixKind, Safety
from tapelint.fixes.carry_detach import carry_detach_edits, detach_statement
from tapelint.fixes.edits import fix_of
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, loop_phrase, reuse_related, semantics_note


class CarriedTrackedState(Rule[CarriedHazard]):
    """
    ## What it does
    Finds a tracked value carried from one iteration into the next — an RNN
    hidden state, running statistics, an EMA target computed with grad —
    and reached by a backward on every iteration.

    ## Why is this bad
    Each iteration's graph hangs off the previous one through the carried
    value. The backward of iteration *i* frees iteration *i*'s graph; the
    backward of iteration *i + 1* walks through the carried value into it
    and fails (and, where it does not fail, every step walks the whole
    history: truncated BPTT that never truncates).

    The diagnostic points at the statement of the loop that re-creates the
    carried value (where the detach goes); when that happens inside a
    function the loop calls (`out, h = model(x, h)` running `forward`), its
    `definition` location is the line inside that function which creates
    the node, which is what a run of the engine names.

    ## Fix safety
    Detaching where the value is carried ("repackaging" the hidden state)
    cuts the gradient at the iteration boundary: that is truncated BPTT, and
    it is unsafe only in that it changes the gradient, by design. The edit
    inserts `h = h.detach()` as the first statement of the loop body (of the
    method, for `self.h` carried between calls: a step method, or a
    module's `forward` keeping its state on `self`; not when that method
    also runs in an inner loop, the time steps of one sequence, whose
    history must flow: there the fix is a reset per sequence, suggested);
    `h = tuple(t.detach() for t in h)` for a tuple state (LSTM); under
    `if h is not None:` when `h` starts as None. The shape comes from what
    the value is bound to: a literal, a tensor factory, or an `nn.RNN`,
    `GRU`, `LSTM` or cell constructed in the module. When it cannot be told
    (or the bindings disagree) there is no edit: a wrong shape would crash.
    """

    code = "TL005"
    name = "carried-tracked-state"
    summary = "a tracked value is carried across iterations and backwarded through each time"
    hazard_kinds = frozenset({HazardKind.CARRIED})
    invalid = (
        Invalid(
            """\
import torch
import torch.nn as nn
rnn = nn.RNN(3, 4, batch_first=True)
h = None
for step in range(3):
    out, h = rnn(torch.randn(2, 5, 3), h)
    loss = out.sum()
    loss.backward()
""",
            line=6,
            torch="fails 8 node 6",
            strict="fails 8 node 6",
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
rnn = nn.GRU(3, 4, batch_first=True)
h = None
for step in range(3):
    out, h = rnn(torch.randn(2, 5, 3), h)
    out.sum().backward(retain_graph=True)
""",
            line=6,
            semantics="strict",
            torch="grows",
            strict="fails 7 node 6",
        ),
    )
    valid = (
        Valid(
            """\
import torch
import torch.nn as nn
rnn = nn.RNN(3, 4, batch_first=True)
h = None
for step in range(3):
    if h is not None:
        h = h.detach()
    out, h = rnn(torch.randn(2, 5, 3), h)
    loss = out.sum()
    loss.backward()
""",
            torch="ok",
            strict="ok",
        ),
    )

    def report(self, hazard: CarriedHazard, ctx: ReportContext) -> Diagnostic:
        name = hazard.value
        anchor = hazard.anchor if hazard.anchor is not None else hazard.definition
        created = ctx.line_of(anchor)
        inner = "" if hazard.anchor is None else f", by the call that runs line {ctx.line_of(hazard.definition)}"
        message = (
            f"`{name}` is carried from one iteration of {loop_phrase(hazard, ctx)} into the next "
            f"(created at line {created}{inner}): the backward at line "
            f"{ctx.line_of(hazard.fails_at.call)} frees each iteration's graph, and the next iteration's "
            f"backward walks into it again through `{name}` and fails. " + _remedy(hazard, ctx) + semantics_note(hazard)
        )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=anchor,
            message=message,
            related=reuse_related(hazard, ctx),
            fixes=(
                fix_of(FixKind.DETACH, Safety.UNSAFE, f"detach `{name}` at the start of each iteration",
                       carry_detach_edits(hazard, ctx)),
            ),
        )


def _remedy(hazard: CarriedHazard, ctx: ReportContext) -> str:
    """Detach where the value is carried; when it is also remade by an inner
    loop whose steps must chain (the time steps of one sequence), reset or
    detach it before each iteration of the carrying loop instead."""
    statement = detach_statement(hazard, ctx)
    if hazard.remade_in_inner_loop and statement is None:
        return (f"Reset it (or detach it) before each iteration of {loop_phrase(hazard, ctx)} starts, "
                "not where it is remade: there its history across the inner loop's steps is meant to flow.")
    return f"Detach it where it is carried ({_detaching(hazard.value, statement)}), as truncated BPTT does."


def _detaching(name: str, statement: Optional[str]) -> str:
    """The statement that detaches a carried name: the fix's own when it has
    one (`state = tuple(t.detach() for t in state)` for an LSTM's state); for an
    element of a container (`w - 0.1 * w.sin()` in a list comprehension) an
    assignment to it is no code."""
    if statement is not None:
        return f"`{statement}`"
    bound = name.isidentifier() or (name.startswith("self.") and name[5:].isidentifier())
    return f"`{name} = {name}.detach()`" if bound else "detach what the next iteration starts from"
