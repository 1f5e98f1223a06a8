"""The abstract graph of `analysis.md`: nodes, backward events, hazards.

An abstract node stands for the tensors created at one expression (its site)
in one loop context. Edges point from a node to its parents. A *carried* edge
(`AbstractNode.carried_over`) is the back edge of a loop: the node it leads to
is the same site's tensor from the previous iteration. Counting carried edges
on a walk tells apart "this iteration's node" from "an earlier iteration's
node" — the whole difference between a fresh graph and a reused one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional

import libcst as cst

from tapelint.ops import Saves


class Tracked(str, Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"

    @staticmethod
    def join(values: "list[Tracked]") -> "Tracked":
        if any(v is Tracked.YES for v in values):
            return Tracked.YES
        if any(v is Tracked.UNKNOWN for v in values):
            return Tracked.UNKNOWN
        return Tracked.NO


class Retains(str, Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Loop:
    """A loop statement, or the implicit loop of a step function called once
    per training step (`node` is then the function definition)."""

    node: cst.CSTNode
    implicit: bool = False
    label: str = ""  # "for", "while", "step method train_step"


@dataclass(eq=False)
class AbstractNode:
    """Tensors created at one site in one loop context. Identity is the object."""

    site: cst.CSTNode
    loops: tuple[Loop, ...]
    tracked: Tracked
    leaf: bool
    saves: Saves
    op: str  # what created it, for messages: "exp", "self.encoder(...)", "*"
    parents: list["AbstractNode"] = field(default_factory=list)
    name: Optional[str] = None  # the first name bound to it, for messages
    # Set on the stand-in for "this site's tensor from the previous iteration of `carried_over`".
    carried_over: Optional[Loop] = None
    origin: Optional["AbstractNode"] = None  # the node a carried stand-in stands for

    @property
    def real(self) -> "AbstractNode":
        return self.origin if self.origin is not None else self

    def __repr__(self) -> str:  # debugging aid for tests
        flag = f" carried<{self.carried_over.label}>" if self.carried_over else ""
        return f"<{self.op} {self.name or ''} {self.tracked.value}{' leaf' if self.leaf else ''}{flag}>"


@dataclass(eq=False)
class BackwardEvent:
    """A call site that walks a graph."""

    call: cst.Call
    roots: list[AbstractNode]
    retains: Retains
    loops: tuple[Loop, ...]
    order: int  # program order within its scope
    scope: cst.CSTNode
    api: str  # "loss.backward()", "torch.autograd.grad(...)"
    is_grad: bool = False  # torch.autograd.grad (does not touch .grad)
    creates_graph: bool = False


class HazardKind(str, Enum):
    HOISTED = "hoisted"  # TL001
    SHARED = "shared"  # TL002
    ACCUMULATION = "accumulation"  # TL003
    REPEATED = "repeated"  # TL004
    CARRIED = "carried"  # TL005
    RETAIN_TO_COMBINE = "retain-to-combine"  # TL006


@dataclass(frozen=True)
class Hazard:
    """One finding of the mechanism, before a rule turns it into a diagnostic."""

    kind: HazardKind
    value: str  # the user's name for the reused value ("feats", "self.h")
    definition: cst.CSTNode  # where the reused node is created
    fails_under_torch: bool
    saves_assumed: bool  # torch verdict rests on an unknown call assumed to save
    op: str = ""
    loop: Optional[Loop] = None
    first_backward: Optional[BackwardEvent] = None
    fails_at: Optional[BackwardEvent] = None
    accumulator: Optional[cst.CSTNode] = None  # TL003: the accumulating statement
    accumulator_target: Optional[cst.CSTNode] = None  # TL003: where the total is created
    retention_with_backward: bool = True  # TL003 flavour
    retain_arg: Optional[cst.CSTNode] = None  # TL006: the retain_graph=True argument
    definition_statement: Optional[cst.CSTNode] = None  # for fixes
