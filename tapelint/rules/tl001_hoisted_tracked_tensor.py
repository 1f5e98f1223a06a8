"""TL001 hoisted-tracked-tensor."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.findings import HazardKind, HoistedHazard
from tapelint.diagnostics import Diagnostic, Fix, FixKind, Related, Role, Safety
from tapelint.fixes.detach import definition_detach_edits
from tapelint.fixes.edits import fix_of
from tapelint.fixes.recompute import recompute_edits
from tapelint.rules.base import (
    Invalid,
    ReportContext,
    Rule,
    Valid,
    assigned_name,
    function_of,
    loop_phrase,
    reuse_related,
    semantics_note,
)


class HoistedTrackedTensor(Rule[HoistedHazard]):
    """
    ## What it does
    Finds a tracked, non-leaf tensor computed once outside a loop (or cached
    on `self`, a closure or a global) that a backward inside the loop walks on
    every iteration. A value made inside a function that the code calls once
    before the loop and that returns it (`codes, _ = autoencoder(x)`, the
    graph made in `AutoEncoder.forward`) is reported at that call, under the
    name it binds there, with the function's line as a related location.

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
    Otherwise it is a suggestion only, as both are for a finding reported at
    the call that returned the value (run it under `torch.no_grad()`, detach
    what it binds, or call it in the loop: the user's choice at that call).
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
        if hazard.anchor is not None:
            return self._report_at_call(hazard, hazard.anchor, ctx)
        name = hazard.value
        defined = ctx.line_of(hazard.definition)
        fails = ctx.line_of(hazard.fails_at.call)
        inside = f"`{hazard.loop.step_function}()`" if hazard.loop.implicit else "the loop"
        if hazard.kept_in is not None:
            # An element added on every iteration and still in the container on the next
            # (REINFORCE's log-probs of the previous episode): computed every time, kept too long.
            container = _container_name(hazard.kept_in, ctx)
            message = (
                f"`{assigned_name(hazard.definition, ctx)}` (line {defined}) is computed on every iteration of "
                f"{loop_phrase(hazard, ctx)}, but an "
                f"element kept in {container} from the previous iteration is walked again by the backward at line "
                f"{fails}, which freed it then. Empty the container after each backward (`del ...[:]`, "
                f"`.clear()`), or detach what it keeps if that needs no gradient."
            )
        else:
            message = (
                f"`{name}` is computed {self._when(hazard, ctx)}; the backward at line {fails} frees it "
                f"{self._fails_when(hazard)}. Detach it if it needs no gradient, or compute it inside {inside}."
            )
        return self.diagnostic(
            hazard,
            ctx,
            anchor=hazard.definition,
            message=message + semantics_note(hazard),
            related=reuse_related(hazard, ctx),
            fixes=self._fixes(hazard, ctx),
        )

    def _report_at_call(self, hazard: HoistedHazard, call: cst.CSTNode, ctx: ReportContext) -> Diagnostic:
        """The value was made inside a function that the loop's scope called
        once, before the loop: reported at that call, under the name it
        binds there, with where the function makes it as a related location.
        The fixes are the user's at that call (detach what it returns, run
        it under `torch.no_grad()`, or call it in the loop): descriptions."""
        name = _bound_by(call, ctx) or abbreviate(ctx.code_of(call))
        inner = f"`{hazard.value}`, line {ctx.line_of(hazard.definition)}"
        where = function_of(hazard.definition, ctx)
        message = (
            f"`{name}` is computed once at line {ctx.line_of(call)} (by the call that makes {inner}), outside "
            f"{loop_phrase(hazard, ctx)}; the backward at line {ctx.line_of(hazard.fails_at.call)} frees it "
            f"{self._fails_when(hazard)}. Compute it under `torch.no_grad()` (or detach it) if it needs no "
            f"gradient, or compute it inside the loop."
        )
        created = Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                          f"`{hazard.value}` is created here, inside `{where}`")
        return self.diagnostic(
            hazard,
            ctx,
            anchor=call,
            message=message + semantics_note(hazard),
            related=(created, *reuse_related(hazard, ctx)[1:]),
            fixes=(
                fix_of(FixKind.DETACH, Safety.UNSAFE,
                       f"compute `{name}` under `torch.no_grad()`, or detach it after the call (it then gets no "
                       f"gradient)", ()),
                fix_of(FixKind.RECOMPUTE, Safety.UNSAFE, f"compute `{name}` inside the loop, once per iteration",
                       ()),
            ),
        )

    @staticmethod
    def _when(hazard: HoistedHazard, ctx: ReportContext) -> str:
        """When the value is computed, as the analysis found it: once before the
        loop (or outside the step function), or on an earlier iteration and
        kept, not recomputed, on the next (a cache)."""
        defined = ctx.line_of(hazard.definition)
        loop = hazard.loop
        if hazard.earlier_iteration:
            earlier = f"an earlier call of `{loop.step_function}()`" if loop.implicit else \
                f"an earlier iteration of {loop_phrase(hazard, ctx)}"
            return f"at line {defined} in {earlier} and kept, not recomputed"
        if not loop.implicit and type(loop.node) is cst.Call:
            # the loop runs inside a function of another module, placed at this call
            return (f"once, outside the loop that `{abbreviate(ctx.code_of(loop.node))}` (line {defined}) runs "
                    f"in another file")
        return f"once at line {defined}, outside {loop_phrase(hazard, ctx)}"

    @staticmethod
    def _fails_when(hazard: HoistedHazard) -> str:
        if hazard.earlier_iteration:
            return "then and fails on a later " + ("step" if hazard.loop.implicit else "iteration")
        if hazard.loop.implicit:
            return "on the first step and fails on the second"
        return "on the first iteration and fails on the second"

    def _fixes(self, hazard: HoistedHazard, ctx: ReportContext) -> tuple[Fix, ...]:
        """Recompute first when it can be applied: it keeps the gradients."""
        name = hazard.value
        detach = fix_of(FixKind.DETACH, Safety.UNSAFE,
                        f"detach `{name}` where it is created (it then gets no gradient)",
                        definition_detach_edits(hazard, ctx))
        if hazard.kept_in is not None:
            # It is computed inside the loop already: what makes each iteration walk only
            # values it recomputed is emptying the container, a statement the user places.
            recompute = fix_of(FixKind.RECOMPUTE, Safety.UNSAFE,
                               f"empty {_container_name(hazard.kept_in, ctx)} after each backward, so every "
                               f"iteration walks only the elements it computed", ())
            return detach, recompute
        recompute = fix_of(FixKind.RECOMPUTE, Safety.UNSAFE, f"compute `{name}` inside the loop, once per iteration",
                           recompute_edits(hazard, ctx))
        return (recompute, detach) if recompute.edits else (detach, recompute)


def _container_name(site: cst.CSTNode, ctx: ReportContext) -> str:
    """The container created at `site`, as its creation names it
    (`self.saved_log_probs` of `self.saved_log_probs = []`)."""
    statement = ctx.names.parent(site)
    if type(site) in (cst.List, cst.Dict, cst.ListComp, cst.DictComp) and isinstance(statement, cst.Assign) \
            and len(statement.targets) == 1:
        return f"`{ctx.code_of(statement.targets[0].target)}` (created at line {ctx.line_of(site)})"
    return f"the container created at line {ctx.line_of(site)}"


def _bound_by(call: cst.CSTNode, ctx: ReportContext) -> Optional[str]:
    """The name the assignment of `call` binds (`X_train` of `X_train, _ =
    encoder(x)`: the one name not spelled as discarded), if there is one."""
    statement = ctx.names.parent(call)
    if not (isinstance(statement, cst.Assign) and statement.value is call and len(statement.targets) == 1):
        return None
    target = statement.targets[0].target
    if type(target) not in (cst.Tuple, cst.List):
        return ctx.code_of(target)
    kept = [e.value for e in target.elements  # type: ignore[attr-defined]
            if not (type(e.value) is cst.Name and e.value.value.startswith("_"))]
    return ctx.code_of(kept[0]) if len(kept) == 1 else None
