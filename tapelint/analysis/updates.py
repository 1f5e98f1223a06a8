"""Which optimizer steps follow each backward, and what that makes a loss's
part in a training step (TL002's branch detach: the GAN fix).

The interpreter reports backwards and steps in program order (`Recorder`).
The steps that follow a backward are the ones its gradients feed: those
after it and before the next backward of the same line of calls (a step in
a caller counts for a backward in the helper it called: `backward_D();
optimizer_D.step()`).

A loss's part (`BranchRole`) is then read off the graph, never off names:
the parameters its walk reaches without passing through the shared sample,
the parameters it reaches only through it, and the owners the optimizers
stepped after it update (`StepEvent.owners`). The loss whose stepped
parameters it all reaches without the sample (the discriminator's) may have
the sample detached; the loss whose stepped parameters sit behind the
sample (the generator's own) must not: detaching there freezes the
generator, with no error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.model import OPAQUE, AbstractNode, BackwardEvent, Carried, GraphValue, StepEvent, Tracked


class BranchRole(str, Enum):
    DETACHABLE = "detachable"  # every parameter its optimizer steps is reached without the sample
    TRAINS_PRODUCER = "trains-producer"  # its optimizer steps parameters reached only through the sample
    UNKNOWN = "unknown"  # no step after it, or nothing told apart


class StepLog:
    """The steps after each backward, as the interpreter reports them."""

    def __init__(self) -> None:
        self.after: dict[BackwardEvent, list[StepEvent]] = {}
        self._open: list[tuple[BackwardEvent, bool]] = []  # backwards still collecting steps, and "stepped yet"

    def on_backward(self, event: BackwardEvent) -> None:
        """A backward closes the earlier ones of its line of calls that a step
        already followed, and those of another analysed scope (no step of
        this one can follow them): so what stays open is one scope's at most."""
        root = _scope(event)
        self._open = [(e, stepped) for e, stepped in self._open
                      if e is not event and _scope(e) is root
                      and not (stepped and _same_line(e.context, event.context))]
        self._open.append((event, False))

    def on_step(self, step: StepEvent) -> None:
        depth = len(step.context)
        still = []
        for event, stepped in self._open:
            if event.context[:depth] == step.context:
                steps = self.after.setdefault(event, [])
                if step not in steps:
                    steps.append(step)
                stepped = True
            still.append((event, stepped))
        self._open = still


def _scope(event: BackwardEvent) -> object:
    """The function analysed on its own that the backward ran under (a call
    chain starts with it), or None for module code (its chains start with a call)."""
    first = event.context[0] if event.context else None
    return first if type(first) is cst_nodes.FunctionDef else None


def _same_line(a: tuple, b: tuple) -> bool:
    """Does one call chain contain the other (the same activation's line)?"""
    depth = min(len(a), len(b))
    return a[:depth] == b[:depth]


def branch_role(event: BackwardEvent, steps: Iterable[StepEvent], sample: cst.CSTNode) -> BranchRole:
    """What detaching the nodes made at `sample` would do to this loss's
    training step (see the module docstring). Unknown when no step follows
    it, or when a parameter owner is reached both through the sample and
    without it (two instances of one class: their layers share owners)."""
    stepped = frozenset(owner for step in steps for owner in step.owners)
    if not stepped:
        return BranchRole.UNKNOWN
    roots = [_node(r) for r in event.roots]
    without = _parameters(roots, lambda n: made_at(n, sample))
    through = _parameters((n for n in _nodes(roots, lambda n: False) if made_at(n, sample)), lambda n: False)
    if through & without:
        return BranchRole.UNKNOWN
    if stepped & through:
        return BranchRole.TRAINS_PRODUCER
    if stepped & without:
        return BranchRole.DETACHABLE
    return BranchRole.UNKNOWN


def made_at(node: AbstractNode, site: cst.CSTNode) -> bool:
    """Made at `site`, or inside a call made there (`G(z)` running `forward`)."""
    return node.site is site or any(call is site for call in node.context)


def _node(value: GraphValue) -> AbstractNode:
    return value.node if isinstance(value, Carried) else value


def _nodes(roots: Iterable[AbstractNode], blocked: Callable[[AbstractNode], bool]) -> Iterator[AbstractNode]:
    """The nodes a walk from `roots` meets, not entering `blocked` ones."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in seen or node is OPAQUE or blocked(node):
            continue
        seen.add(id(node))
        yield node
        if not node.leaf:
            stack.extend(_node(p) for p in node.parents)


def _parameters(roots: Iterable[AbstractNode], blocked: Callable[[AbstractNode], bool]) -> frozenset:
    """The owners (sites) of the trainable leaves a walk from `roots` reaches."""
    return frozenset(n.site for n in _nodes(roots, blocked) if n.leaf and n.tracked is Tracked.YES)
