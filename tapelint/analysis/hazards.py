"""The one question of `analysis.md`, asked at every backward event: does this
walk reach a node that an earlier backward already released?

A *key* names one runtime tensor: an abstract node plus its age — `None` for
"this iteration's" (or a node outside every loop in play), or the loop whose
previous iteration created it. Released keys flow forward through the
program with the abstract state; a backward that reaches one is a hazard, and
where the released node was created decides which rule reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from tapelint.analysis.model import (
    AbstractNode,
    BackwardEvent,
    Carried,
    GraphValue,
    Loop,
    Tracked,
)
from tapelint.ops import Saves

Key = tuple[AbstractNode, Optional[Loop]]


def _key(node: AbstractNode, age: Optional[Loop]) -> Key:
    return (node, age if age is not None and age in node.loops else None)


def older(node: AbstractNode, a: Optional[Loop], b: Optional[Loop]) -> Optional[Loop]:
    """Of two ages of `node`, the one meaning the earlier tensor: "the
    previous iteration of an outer loop" is older than "of an inner loop"."""
    if a is None or a not in node.loops:
        return b
    if b is None or b not in node.loops:
        return a
    return a if node.loops.index(a) <= node.loops.index(b) else b


def _steps(value: GraphValue, age: Optional[Loop]) -> tuple[AbstractNode, Optional[Loop]]:
    if isinstance(value, Carried):
        return value.node, older(value.node, age, value.loop)
    return value, age


def walk(roots: Iterable[GraphValue]) -> Iterator[tuple[Key, list[Key]]]:
    """Every graph node a backward from `roots` runs (non-leaf, possibly
    tracked), with the keys of its parents that it will run next."""
    seen: set[Key] = set()
    stack: list[Key] = []
    for root in roots:
        node, age = _steps(root, None)
        stack.append(_key(node, age))
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen.add(key)
        node, age = key
        if node.leaf or node.tracked is Tracked.NO:
            continue
        children: list[Key] = []
        for parent in node.parents:
            p_node, p_age = _steps(parent, age)
            children.append(_key(p_node, p_age))
        yield key, children
        stack.extend(children)


@dataclass(frozen=True)
class Reuse:
    """A released node reached again: `frontier` is where the walk first
    meets released ground; `group` is all released graph behind it."""

    frontier: Key
    group: tuple[Key, ...]
    first: BackwardEvent

    @property
    def fails_under_torch(self) -> bool:
        return any(node.saves is not Saves.NOTHING for node, _ in self.group)

    @property
    def saves_assumed(self) -> bool:
        return not any(node.saves is Saves.TENSORS for node, _ in self.group)

    @property
    def assumed_ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(node.op for node, _ in self.group if node.saves is Saves.UNKNOWN))


def find_reuse(roots: Iterable[GraphValue], released: dict[Key, BackwardEvent]) -> list[Reuse]:
    """The released regions a walk from `roots` enters, one per frontier."""
    graph = dict(walk(roots))
    frontiers: list[Key] = []
    seen: set[Key] = set()
    stack = [k for k in (_key(*_steps(r, None)) for r in roots)]
    while stack:
        key = stack.pop()
        if key in seen or key not in graph:
            continue
        seen.add(key)
        if key in released:
            frontiers.append(key)
            continue
        stack.extend(graph[key])
    reuses = []
    for frontier in frontiers:
        group = [k for k in _reachable(frontier, graph) if k in released]
        reuses.append(Reuse(frontier, tuple(group), released[frontier]))
    return reuses


def _reachable(start: Key, graph: dict[Key, list[Key]]) -> list[Key]:
    out: list[Key] = []
    seen = {start}
    stack = [start]
    while stack:
        key = stack.pop()
        out.append(key)
        for child in graph.get(key, ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return out


def feeds_itself(node: AbstractNode, loop: Loop) -> bool:
    """Is `node` recomputed from its own previous-iteration value (a hidden
    state `h = f(h)`), rather than cached once and reused?"""
    seen: set[int] = set()
    stack: list[GraphValue] = list(node.parents)
    while stack:
        value = stack.pop()
        if isinstance(value, Carried):
            if value.node is node and value.loop == loop:
                return True
            value = value.node
        if id(value) in seen:
            continue
        seen.add(id(value))
        stack.extend(value.parents)
    return False
