"""What the analysis hands the rules: one record per kind of hazard, each
with exactly the fields its rule needs (all required, so a rule never
dereferences a field that another kind leaves empty)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import ClassVar, Optional

import libcst as cst

from tapelint.analysis.model import BackwardEvent, Loop, StepEvent
from tapelint.analysis.shapes import ValueShape
from tapelint.analysis.updates import BranchRole


class HazardKind(str, Enum):
    HOISTED = "hoisted"  # TL001
    SHARED = "shared"  # TL002
    ACCUMULATION = "accumulation"  # TL003
    REPEATED = "repeated"  # TL004
    CARRIED = "carried"  # TL005
    RETAIN_TO_COMBINE = "retain-to-combine"  # TL006
    STALE = "stale"  # TL007


@dataclass(frozen=True)
class Hazard:
    """One finding of the mechanism, before a rule turns it into a diagnostic."""

    kind: ClassVar[HazardKind]
    value: str  # the user's name for the value ("feats", "self.h")
    definition: cst.CSTNode  # where its node is created
    fails_under_torch: bool

    def others(self) -> tuple[Hazard, ...]:
        """The same hazard as found at its other sites (one finding per hazard)."""
        return ()


@dataclass(frozen=True)
class ReuseHazard(Hazard):
    """A backward (`fails_at`) walking a node that an earlier one (`first_backward`,
    possibly the same call in an earlier iteration) released."""

    saves_assumed: bool  # the torch verdict rests on an unknown call assumed to save
    # PyTorch runs it only because the earlier walk passed retain_graph=True,
    # which a strict tape does not have (or was an `autograd.grad`, which
    # PyTorch stops at its inputs and a strict tape does not).
    retained: bool
    op: str  # the calls assumed to save tensors, for the message
    first_backward: BackwardEvent
    fails_at: BackwardEvent
    # The other walks into the same released ground (each branch of an if/else that
    # backwards the value, later iterations' walks of a hoisted one): one hazard, one finding.
    also_fails_at: tuple[BackwardEvent, ...]

    def others(self) -> tuple[Hazard, ...]:
        return tuple(replace(self, fails_at=event, also_fails_at=()) for event in self.also_fails_at)


@dataclass(frozen=True)
class HoistedHazard(ReuseHazard):
    """TL001: created once outside `loop` (or cached), walked on every iteration;
    or (`earlier_iteration`) created inside `loop` and reached again as an
    earlier iteration's value (a cache filled once, an element a list keeps)."""

    kind: ClassVar[HazardKind] = HazardKind.HOISTED
    loop: Loop
    earlier_iteration: bool
    kept_in: Optional[cst.CSTNode]  # where the container that keeps it was created (`self.saved = []`)
    # Set by `analysis.fix_facts` once the module is interpreted (unknown until then):
    definition_shape: ValueShape = ValueShape.OTHER  # what `definition` evaluates to
    # Where the user acts, when it is not the definition: a value created
    # inside a function that the loop's scope calls before the loop
    # (`codes, _ = autoencoder(x)`) is reported at that call.
    anchor: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class SharedHazard(ReuseHazard):
    """TL002: two backwards whose roots share the node; `loop` when the node
    comes from an earlier iteration."""

    kind: ClassVar[HazardKind] = HazardKind.SHARED
    loop: Optional[Loop]
    # Set by `analysis.fix_facts` once the module is interpreted (unknown until then):
    # the part of (`first_backward`'s loss, `fails_at`'s loss) in its training step,
    roles: tuple[BranchRole, BranchRole] = (BranchRole.UNKNOWN, BranchRole.UNKNOWN)
    sample_shape: ValueShape = ValueShape.OTHER  # and what the shared `value` is bound to


@dataclass(frozen=True)
class RepeatedHazard(ReuseHazard):
    """TL004: the same root walked again — by another call, or by the same
    call (`first_backward is fails_at`) on every iteration of `loop`."""

    kind: ClassVar[HazardKind] = HazardKind.REPEATED
    loop: Optional[Loop]


@dataclass(frozen=True)
class CarriedHazard(ReuseHazard):
    """TL005: carried from one iteration of `loop` into the next."""

    kind: ClassVar[HazardKind] = HazardKind.CARRIED
    loop: Loop
    # Where the user acts, when it is not the definition: a carried value
    # created inside a function the loop calls is reported at that call.
    anchor: Optional[cst.CSTNode]
    # The carried value is remade in a loop nested in `loop` too (a spiking
    # neuron's membrane over the time steps of one batch): within that loop
    # its history is meant to flow, so a detach at each remaking is no fix.
    remade_in_inner_loop: bool = False
    # Set by `analysis.fix_facts` once the module is interpreted: for each
    # binding of `value` in the module, (bound expression, position unpacked
    # or None, the shape of what it binds): what the detach fix shapes itself after.
    binding_shapes: tuple[tuple[cst.CSTNode, Optional[int], ValueShape], ...] = ()


@dataclass(frozen=True)
class AccumulationHazard(Hazard):
    """TL003: a tracked value accumulated into a total that outlives the iteration."""

    kind: ClassVar[HazardKind] = HazardKind.ACCUMULATION
    loop: Loop
    accumulator: cst.CSTNode  # the accumulating statement (AugAssign, Assign, `.append(...)` call)
    accumulator_target: cst.BaseExpression  # the total
    retention_with_backward: bool  # each iteration backwards (else: an evaluation loop)
    # The other statements that accumulate into the same total in the same loop
    # (`total += loss` in one arm of an if/else, `total += 2 * loss` in the other).
    also: tuple[AccumulationHazard, ...]
    # Set by `analysis.fix_facts` once the module is interpreted: what the added value evaluates to.
    value_shape: ValueShape = ValueShape.OTHER

    def others(self) -> tuple[Hazard, ...]:
        return self.also


@dataclass(frozen=True)
class RetainHazard(Hazard):
    """TL006: `retain_graph=True` on `first_backward` only serves `fails_at`."""

    kind: ClassVar[HazardKind] = HazardKind.RETAIN_TO_COMBINE
    first_backward: BackwardEvent
    fails_at: BackwardEvent
    retain_arg: Optional[cst.Arg]


@dataclass(frozen=True)
class StaleHazard(Hazard):
    """TL007: `fails_at` walks `value` (created at `definition`), which saved a
    parameter of `module` that `step` changed in place after it was created.

    The scope the user reads is the innermost one that runs both the step and
    the failing backward: `fails_site` and `step_site` are the statements'
    calls there (`self._update(opt_g, g_loss)` running `loss.backward()` and
    `opt.step()` in a helper), the backward and the step themselves when
    they are written in that scope."""

    kind: ClassVar[HazardKind] = HazardKind.STALE
    step: StepEvent
    fails_at: BackwardEvent
    fails_site: cst.CSTNode  # the primary range: the failing backward, or the call here that runs it
    step_site: cst.CSTNode  # the step, or the call here that runs it
    module: str  # the module whose parameter was saved, as the user's scope names it
    loop: Optional[Loop]  # set when the stale node is the previous iteration's of this loop (carried)
    # The call in the backward's scope through which a node made in a callee
    # (`discriminator(real)` running `forward`) was created: where the user reads it.
    anchor: Optional[cst.CSTNode]
    # The earlier `retain_graph=True` walk that kept the graph for this one, if any.
    kept_by: Optional[BackwardEvent]
