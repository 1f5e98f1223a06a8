"""Walking the abstract graph as a backward does: from the roots through
every tracked non-leaf node, a `Carried` stand-in leading to the previous
iteration's tensor (its key's age). The reuse hazards (`hazards`), TL003's
classifier (`accumulation`) and the stale-graph check (`staleness`) all
walk this way."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from tapelint.analysis.model import (
    CLOCK,
    AbstractNode,
    BackwardEvent,
    Carried,
    FunctionRef,
    GraphValue,
    Loop,
    Tracked,
    TupleVal,
)
from tapelint.analysis.state import Key, State, older

if TYPE_CHECKING:
    from tapelint.analysis.store import NodeStore


def key_of(node: AbstractNode, age: Optional[Loop]) -> Key:
    return (node, age if age is not None and age in node.loops else None)


def steps(value: GraphValue, age: Optional[Loop]) -> tuple[AbstractNode, Optional[Loop]]:
    if isinstance(value, Carried):
        return value.node, older(value.node, age, value.loop)
    return value, age


@dataclass(frozen=True)
class Iterations:
    """Where a walk runs: the loops in their first iteration, and those past
    it (of any other loop, the walk may run in either)."""

    first: frozenset[Loop]
    later: frozenset[Loop]


def parents_of(node: AbstractNode, age: Optional[Loop], where: Optional[Iterations]) -> list[GraphValue]:
    """The parents of `node`'s tensor of `age` (`key_of`) as a walk `where`
    meets it: those it was made with in the iterations the walk runs in.
    The iteration of `age` and of the loops inside it is an earlier one, any."""
    if where is None or len(node.parents_when) < 2:
        return node.parents
    loops = node.loops if age is None else node.loops[:node.loops.index(age)]
    known = [(loop, loop in where.later) for loop in loops if loop in where.first or loop in where.later]
    if not known:
        return node.parents
    return [parent for when, parents in node.parents_when.items()
            if all((loop in when) is later for loop, later in known) for parent in parents]


def walk(roots: Iterable[GraphValue], where: Optional[Iterations] = None,
         stop: Collection[AbstractNode] = ()) -> Iterator[tuple[Key, list[Key]]]:
    """Every graph node a backward from `roots` runs (non-leaf, possibly
    tracked), with the keys of its parents that it will run next. `where`:
    which iterations the walk runs in, if known (`parents_of`); `stop`, the
    inputs of an `autograd.grad`, whose own history it does not run."""
    seen: set[Key] = set()
    stack: list[Key] = []
    for root in roots:
        node, age = steps(root, None)
        stack.append(key_of(node, age))
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        node, age = key
        if node.leaf or node.tracked is Tracked.NO or node in stop:
            continue
        children: list[Key] = []
        for parent in parents_of(node, age, where):
            p_node, p_age = steps(parent, age)
            children.append(key_of(p_node, p_age))
        yield key, children
        stack.extend(children)


@dataclass
class DeadReleases:
    """What `without_dead_releases` found in one module's analysis, by what
    decides it: the keys bound, the keys released and the candidates. An
    answer holds while the graph (the store's `changes`) and the clock are
    as they were (`at`): the same question asked again (the two sides of an
    `if` that only logs, a loop's exits) has the same answer, and its walk
    would stamp no node the first did not already stamp with this clock."""

    at: tuple[int, int] = (-1, -1)
    found: dict[tuple[frozenset[Key], frozenset[Key], frozenset[Key]], list[Key]] = field(default_factory=dict)


def without_dead_releases(state: State, loops: Sequence[Loop], store: NodeStore, also: Collection[Key] = ()) -> State:
    """`state` at the end of an iteration of a loop, before it is carried to
    the next, where a loop is left, or at the end of a branch, before it
    joins the other (the release belongs to its path): a released key of an earlier
    iteration's tensor of one of `loops` (`(n, loop)`: this iteration walked
    the tensor the last one made) is dropped when no binding can reach that
    tensor any more, because every binding of `n` was rebound to this
    iteration's tensor. Kept, the key would read "an earlier iteration's `n`
    was released", and the next iteration's walk of the tensor this one made
    (`alpha = log_alpha.exp()` after each update) would look like a second
    walk of it. `loops` are the loops of the frame whose state this is (what
    a caller's frame holds cannot reach a tensor made in them); `also`, more
    keys to drop where no binding reaches them (a loop's exit, about to be
    joined with the state before it). `store` holds the graph, and the
    answers found since it last changed (`DeadReleases`)."""
    candidates = [key for key in state.released if (key[1] is not None and key[1] in loops) or key in also]
    if not candidates:
        return state
    bound = _bound_keys(state)
    memo = store.dead_releases
    at = (CLOCK.now, store.changes)
    if memo.at != at:
        memo.at, memo.found = at, {}
    question = (bound, frozenset(state.released), frozenset(candidates))
    dead = memo.found.get(question)
    if dead is None:
        dead = memo.found[question] = _unreached(bound, state.released, candidates)
    if not dead:
        return state
    pruned = state.copy()
    for key in dead:
        del pruned.released[key]
    return pruned


def _unreached(bound: frozenset[Key], released: dict[Key, BackwardEvent], candidates: list[Key]) -> list[Key]:
    """The candidates no walk from the `bound` keys reaches. A walk stops
    where the graph is released already, as a backward's does; what it
    meets of an earlier iteration's released ground keeps the ground behind
    it released (what the next walk into it is told was saved)."""
    reached = set(bound)
    # A key is marked reached when first met, and walked on only when a
    # backward would run it: not released, not a leaf, possibly tracked.
    stack = [key for key in reached
             if key not in released and not key[0].leaf and key[0].tracked is not Tracked.NO]
    while stack:  # (`steps` and `key_of` written out: this loop is a large file's hottest)
        node, age = stack.pop()
        for parent in node.parents:
            if isinstance(parent, Carried):
                parent_node = parent.node
                parent_age = older(parent_node, age, parent.loop)
            else:
                parent_node, parent_age = parent, age
            key = (parent_node, parent_age if parent_age is not None and parent_age in parent_node.loops else None)
            if key in reached:
                continue
            reached.add(key)
            if key not in released and not parent_node.leaf and parent_node.tracked is not Tracked.NO:
                stack.append(key)
    # An earlier iteration's released tensor still bound keeps the released
    # ground behind it: a walk meeting it is told what that ground saved.
    stack = [key for key in candidates if key in reached and key[1] is not None]
    while stack:
        node, age = stack.pop()
        for parent in node.parents:
            key = key_of(*steps(parent, age))
            if key in released and key not in reached:
                reached.add(key)
                stack.append(key)
    return [key for key in candidates if key not in reached]


def _bound_keys(state: State) -> frozenset[Key]:
    """The keys of the tensors every binding holds (names, attribute paths,
    containers' and objects' slots, tuples' items, closures' names). The
    values are gathered by set unions, a round per level of tuples and
    closures: the closures of one scope's functions are that scope's
    environment (or an earlier copy of it), and their values, nearly all
    met already, are told apart from new ones without a Python step each."""
    keys: list[Key] = []
    met: set = set().union(*state.env.values())
    closures: set[int] = {id(state.env)}  # (the functions defined in one scope share its environment)
    new = met
    while new:
        inside: set = set()  # what the tuples and closures met in this round hold
        for value in new:
            kind = type(value)  # (not `isinstance`: none is subclassed, and this loop meets every value bound)
            if kind is AbstractNode:
                keys.append((value, None))
            elif kind is Carried:  # (`key_of(*steps(value, None))`)
                keys.append((value.node, value.loop if value.loop in value.node.loops else None))
            elif kind is TupleVal:
                inside.update(*value.items)
            elif kind is FunctionRef and value.closure is not None and id(value.closure) not in closures:
                closures.add(id(value.closure))
                inside.update(*value.closure.values())
        new = inside - met
        met |= new
    return frozenset(keys)
