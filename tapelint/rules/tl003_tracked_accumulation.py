"""TL003 tracked-accumulation."""

from __future__ import annotations

import os

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.anchors import Origin
from tapelint.analysis.findings import AccumulationHazard, HazardKind
from tapelint.analysis.fix_facts import accumulated_total
from tapelint.diagnostics import Diagnostic, Related, Role, Semantics
from tapelint.fixes.edits import quoted_method_call
from tapelint.fixes.item import accumulation_fixes, number_read
from tapelint.rules.base import Invalid, ReportContext, Rule, Valid, loop_phrase


class TrackedAccumulation(Rule[AccumulationHazard]):
    """
    ## What it does
    Finds a tracked value accumulated into something that outlives the
    iteration of a loop over steps: `total += loss`, `total = total + loss`,
    `history.append(loss)`, `d[k] += loss`, `total.add_(loss)`. The total may
    live in a helper the loop calls: a meter's `self.sum += val * n`, a
    callback's list, reached through a dict of meters or a callback list.

    ## Why is this bad
    The running total holds the graph of every iteration it has seen.
    With a backward each iteration, the saved tensors are freed but every
    iteration's graph nodes stay reachable from the total (memory grows
    with the number of steps, and a backward of the total walks old
    iterations again). Without any backward — an evaluation loop outside
    `torch.no_grad()` — every iteration's activations stay alive, and the
    program runs out of memory.

    A strict tape (burn) prunes every node a backward consumed, so there a
    total of backwarded losses stops growing: that flavour is reported under
    `--semantics torch` only; the evaluation loop's grows under both.

    What is accumulated may be one component of the backwarded loss
    (`value_loss` of `value_loss * c - entropy * c2`) and come from a model
    the analysis does not know (`self.model`, an object passed in): the
    backward proves it tracked; of what an unknown call returns unpacked
    (`loss, size, logs = criterion(model, batch)`), only the first name
    and a loss's name count as proven (`logs` is often plain numbers). A
    framework's own loop counts as a loop: metrics kept on `self` by a
    `compute_loss` (Hugging Face `Trainer`) or a Lightning `training_step`
    grow with every step.

    Accumulation that *is* the computation (a loss summed over micro-batches
    and backwarded once, residual sums in a `forward`) is not reported.

    ## Fix safety
    Decided from every other use of the total in the module (names matched
    by spelling: a same-named variable elsewhere can only make it stricter):

    * `.item()` is safe when every use is numeric or reporting (arithmetic,
      comparisons, f-strings, `print`/logging calls, `float`/`round`/`str`...;
      for a list: `len`, `sum`, `min`, `max`, `mean`, an element) and the
      value is known to hold one element (a loss function, an `nn.*Loss`
      object, a full `.sum()`/`.mean()`); otherwise it is a suggestion
      without an edit: a float has no `.item()`, and a tensor of many
      elements has no `.item()` either, so the edit would break the program.
    * `.detach()` is safe when every use is numeric, reporting, or reads the
      tensor (`total.item()`, `.tolist()`): nothing can backward through the
      total, so no gradient changes; otherwise (returned, stored, iterated,
      passed on) it is unsafe.

    Neither has an edit when the accumulated value may be something other
    than one tensor (what a user function returns, a dict, a tuple), nor
    when the statement is in a helper outside the loop and adds what the
    helper's parameters are given (a meter's `update(self, val)`: its
    callers may hand it numbers too). For `total.add_(v)` the total stays
    the tensor it was, so `.item()` needs only a value of one element and
    a total that is not returned, stored or passed on.
    The safe fix is listed (and applied) first; when neither is safe,
    `.detach()` comes first as it keeps the total's type.
    """

    code = "TL003"
    name = "tracked-accumulation"
    summary = "a tracked value is accumulated across iterations, keeping every iteration's graph alive"
    hazard_kinds = frozenset({HazardKind.ACCUMULATION})
    invalid = (
        Invalid(
            """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
total_loss = 0.0
for step in range(3):
    loss = (w * w).sum()
    loss.backward()
    total_loss += loss
print(total_loss)
""",
            line=7,
            torch="grows",
            strict="ok",
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
model = nn.Linear(3, 1)
val_loss = 0.0
for step in range(3):
    val_loss += nn.functional.mse_loss(model(torch.randn(4, 3)), torch.zeros(4, 1))
print(val_loss / 3)
""",
            line=6,
            torch="grows",
            strict="grows",
        ),
        Invalid(
            """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self, batches):
        value_loss_sum = 0.0
        for x in batches:
            values = self.model(x)
            value_loss = values.pow(2).mean()
            (value_loss - values.exp().mean() * 0.01).backward()
            value_loss_sum += value_loss
        return value_loss_sum


total = Trainer(nn.Linear(3, 1)).fit([torch.randn(4, 3) for _ in range(3)])
""",
            line=15,
            torch="grows",
            strict="ok",
        ),
    )
    valid = (
        Valid(
            """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
total_loss = 0.0
for step in range(3):
    loss = (w * w).sum()
    loss.backward()
    total_loss += loss.item()
print(total_loss)
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
import torch.nn as nn
model = nn.Linear(3, 1)
val_loss = 0.0
with torch.no_grad():
    for step in range(3):
        val_loss += nn.functional.mse_loss(model(torch.randn(4, 3)), torch.zeros(4, 1))
print(val_loss / 3)
""",
            torch="ok",
            strict="ok",
        ),
        Valid(
            """\
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
total = 0.0
for micro_batch in range(4):
    total = total + (w * micro_batch).sum()
total.backward()
""",
            torch="grows",
            strict="grows",
        ),
        Valid(
            """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.model = model

    def fit(self, batches):
        value_loss_sum = 0.0
        for x in batches:
            values = self.model(x)
            value_loss = values.pow(2).mean()
            (value_loss - values.exp().mean() * 0.01).backward()
            value_loss_sum += value_loss.item()
        return value_loss_sum


total = Trainer(nn.Linear(3, 1)).fit([torch.randn(4, 3) for _ in range(3)])
""",
            torch="ok",
            strict="ok",
        ),
    )

    def fails_under(self, hazard: AccumulationHazard) -> tuple[Semantics, ...]:
        """With a backward each step, a strict tape prunes what the backward
        consumed: only PyTorch keeps the graphs alive."""
        return (Semantics.TORCH,) if hazard.retention_with_backward else (Semantics.TORCH, Semantics.STRICT)

    def report(self, hazard: AccumulationHazard, ctx: ReportContext) -> Diagnostic:
        total = ctx.code_of(hazard.accumulator_target)
        value = hazard.value
        item = number_read(hazard, ctx) or quoted_method_call(value, "item")
        detach = quoted_method_call(value, "detach")
        loop = loop_phrase(hazard, ctx)
        inside = ctx.origin(Role.ACCUMULATOR)
        if inside is not None:
            return self._report_inside(hazard, ctx, inside, item, detach)
        if hazard.retention_with_backward:
            message = (
                f"`{total}` accumulates `{value}` across the iterations of {loop}: every iteration's graph "
                f"stays reachable from it, so memory grows with the number of steps (and a backward of "
                f"`{total}` would walk old iterations again). Accumulate `{item}` (or "
                f"`{detach}`) instead."
            )
        else:
            message = (
                f"`{total}` accumulates `{value}` across the iterations of {loop}, which runs no backward "
                f"and no `torch.no_grad()`: every iteration's activations stay alive through `{total}`, and "
                f"memory grows until it runs out. Accumulate `{item}`, or run the loop under "
                f"`torch.no_grad()`."
            )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.accumulator,
            message=message,
            related=(
                Related(Role.ACCUMULATOR, ctx.path, ctx.range_of(hazard.accumulator_target),
                        f"`{total}` keeps every iteration's graph"),
                Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                        f"`{value}` is created here, once per iteration"),
            ),
            fixes=accumulation_fixes(
                hazard,
                ctx,
                item=f"accumulate `{item}`, a Python number",
                detach=f"accumulate `{detach}`, a tensor without graph",
            ),
        )

    def _report_inside(self, hazard: AccumulationHazard, ctx: ReportContext, inside: Origin, item: str,
                       detach: str) -> Diagnostic:
        """The accumulation runs in another file's function, called here with
        what makes its value tracked (the model this file passes): the
        message names the statement as that file writes it; its edits belong
        to that file, so the fixes here only describe them."""
        call = abbreviate(ctx.code_of(hazard.accumulator))
        statement = abbreviate(inside.module.code_for_node(inside.node).strip())
        total = abbreviate(inside.module.code_for_node(accumulated_total(inside.node)).strip())
        where = f"`{inside.function}` ({os.path.basename(inside.path)})"
        value = hazard.value
        if hazard.retention_with_backward:
            effect = (f"every iteration's graph stays reachable from `{total}`, so memory grows with the number "
                      f"of steps (and a backward of `{total}` would walk old iterations again)")
        else:
            effect = (f"its loop runs no backward and no `torch.no_grad()`, so every iteration's activations stay "
                      f"alive through `{total}` and memory grows until it runs out")
        message = (f"`{call}` runs `{statement}` in a loop of {where}, where `{value}` is tracked with what this "
                   f"call passes: {effect}. Accumulate `{item}` (or `{detach}`) in {where} instead.")
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.accumulator,
            message=message,
            related=(Related(Role.ACCUMULATOR, ctx.path, ctx.range_of(hazard.accumulator),
                             f"this call runs `{statement}` in a loop of {where}"),),
            fixes=accumulation_fixes(
                hazard,
                ctx,
                item=f"accumulate `{item}`, a Python number, in {where}",
                detach=f"accumulate `{detach}`, a tensor without graph, in {where}",
            ),
        )

