"""The abstract state at one program point, and its lattice operations.

A state maps every name, attribute path (`self.h`) and container slot
(`<list@…>`) to the set of values it may hold, and records which graph
regions earlier backwards released (or retained). Branches merge by `join`
(union of values, union of released regions); at a loop's back edge,
`carry` turns this iteration's nodes and regions into "the previous
iteration's", which is what lets a walk tell a fresh graph from a reused one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar

from tapelint.analysis.model import OPAQUE, AbstractNode, BackwardEvent, Carried, Loop, StepEvent, TupleVal, Value

Vals = frozenset  # frozenset[Value]: what one binding may hold
EMPTY: Vals = frozenset()

# One runtime tensor: an abstract node plus its age — None for "this
# iteration's" (or a node outside every loop in play), or the loop whose
# previous iteration created it.
Key = tuple[AbstractNode, Optional[Loop]]
E = TypeVar("E")  # what a key is marked with: the backward that released it, the step that made it stale


def older(node: AbstractNode, a: Optional[Loop], b: Optional[Loop]) -> Optional[Loop]:
    """Of two ages of `node`, the one meaning the earlier tensor: "the
    previous iteration of an outer loop" is older than "of an inner loop"."""
    if a is None or a not in node.loops:
        return b
    if b is None or b not in node.loops:
        return a
    return a if node.loops.index(a) <= node.loops.index(b) else b


@dataclass
class State:
    """The abstract state at one program point (mutable; branches copy)."""

    env: dict[str, Vals]
    released: dict[Key, BackwardEvent]
    retained: dict[Key, BackwardEvent]  # retaining walks the next backward may rely on (TL006)
    # Every retaining walk, never forgotten: a strict tape has no retain_graph,
    # so under strict these are released as well.
    kept: dict[Key, BackwardEvent] = field(default_factory=dict)
    no_grad: bool = False
    # Nodes whose saved parameters an optimizer step changed in place since
    # they were created (TL007: a walk reaching one fails), by that step.
    stale: dict[Key, StepEvent] = field(default_factory=dict)
    # The path ended here (`continue`, `break`, `return`, `raise`): nothing
    # after it runs, and a join takes the other side as it is.
    ended: bool = False

    def copy(self) -> State:
        return State(dict(self.env), dict(self.released), dict(self.retained), dict(self.kept), self.no_grad,
                     dict(self.stale), self.ended)

    @staticmethod
    def join(a: State, b: State) -> State:
        if a.ended:
            return b.copy()
        if b.ended:
            return a.copy()
        env = dict(a.env)
        for name, vals in b.env.items():
            env[name] = env[name] | vals if name in env else vals
        released = dict(b.released)
        released.update(a.released)
        retained = dict(b.retained)
        retained.update(a.retained)
        kept = dict(b.kept)
        kept.update(a.kept)
        stale = dict(b.stale)
        stale.update(a.stale)
        return State(env, released, retained, kept, a.no_grad and b.no_grad, stale)

    def same(self, other: State) -> bool:
        return (
            self.env == other.env
            and self.released.keys() == other.released.keys()
            and self.retained.keys() == other.retained.keys()
            and self.kept.keys() == other.kept.keys()
            and self.stale.keys() == other.stale.keys()
            and self.no_grad == other.no_grad
            and self.ended == other.ended
        )


def carry(state: State, loop: Loop, stand_in: Callable[[Value, Loop], Value]) -> State:
    """The state at the head of `loop`'s next iteration, from the state at the
    end of this one: nodes created in the loop become their `Carried`
    stand-ins (`stand_in`, memoised by the node store), and so do the
    released regions, which are then "released by an earlier iteration"."""
    env: dict[str, Vals] = {}
    for name, vals in state.env.items():
        if not any(isinstance(v, (AbstractNode, TupleVal)) and v is not OPAQUE for v in vals):
            env[name] = vals  # nothing created in the loop: the same values next iteration
            continue
        carried = frozenset(stand_in(v, loop) for v in vals)
        for value in carried:
            if isinstance(value, Carried) and value.name is None and not name.startswith("<"):
                value.name = name
        env[name] = carried

    def age(keys: dict[Key, E]) -> dict[Key, E]:
        """This iteration's tensors (and those of loops nested in this one)
        become "the previous iteration's"; older ones stay older."""
        aged: dict[Key, E] = {}
        for (node, when), event in keys.items():
            if loop in node.loops:
                when = older(node, when, loop) if when is not None else loop
            aged.setdefault((node, when), event)
        return aged

    return State(env, age(state.released), age(state.retained), age(state.kept), state.no_grad, age(state.stale),
                 state.ended)
