"""Walking the abstract graph as a backward does: from the roots through
every tracked non-leaf node, a `Carried` stand-in leading to the previous
iteration's tensor (its key's age). The reuse hazards (`hazards`), TL003's
classifier (`accumulation`) and the stale-graph check (`staleness`) all
walk this way."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

from tapelint.analysis.model import AbstractNode, Carried, FunctionRef, GraphValue, Loop, Tracked, TupleVal
from tapelint.analysis.state import Key, State, older


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


def without_dead_releases(state: State, loops: Sequence[Loop], also: Collection[Key] = ()) -> State:
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
    joined with the state before it). A walk from the bindings stops where
    the graph is released already, as a backward's does; what it meets of an
    earlier iteration's released ground keeps the ground behind it released
    (what the next walk into it is told was saved)."""
    candidates = [key for key in state.released if (key[1] is not None and key[1] in loops) or key in also]
    if not candidates:
        return state
    released = state.released
    reached: set[Key] = set()
    stack = _bound_keys(state)
    while stack:  # (`steps` and `key_of` written out: this loop is a large file's hottest)
        key = stack.pop()
        if key in reached:
            continue
        reached.add(key)
        node, age = key
        if key in released or node.leaf or node.tracked is Tracked.NO:
            continue
        for parent in node.parents:
            if isinstance(parent, Carried):
                parent_node = parent.node
                parent_age = older(parent_node, age, parent.loop)
            else:
                parent_node, parent_age = parent, age
            stack.append((parent_node, parent_age if parent_age is not None and parent_age in parent_node.loops
                          else None))
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
    dead = [key for key in candidates if key not in reached]
    if not dead:
        return state
    pruned = state.copy()
    for key in dead:
        del pruned.released[key]
    return pruned


def _bound_keys(state: State) -> list[Key]:
    """The keys of the tensors every binding holds (names, attribute paths,
    containers' and objects' slots, tuples' items, closures' names), each
    once: a list, not a generator, for the hottest loop of a large file."""
    keys: list[Key] = []
    met: set[int] = set()
    closures: set[int] = {id(state.env)}  # (the functions defined in one scope share its environment)
    stack: list = [v for vals in state.env.values() for v in vals]
    while stack:
        value = stack.pop()
        if id(value) in met:
            continue
        met.add(id(value))
        if isinstance(value, AbstractNode):
            keys.append((value, None))
        elif isinstance(value, Carried):
            keys.append(key_of(*steps(value, None)))
        elif isinstance(value, TupleVal):
            stack.extend(v for item in value.items for v in item)
        elif isinstance(value, FunctionRef) and value.closure is not None and id(value.closure) not in closures:
            closures.add(id(value.closure))
            stack.extend(v for vals in value.closure.values() for v in vals)
    return keys
