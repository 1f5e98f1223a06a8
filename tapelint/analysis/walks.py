"""Walking the abstract graph as a backward does: from the roots through
every tracked non-leaf node, a `Carried` stand-in leading to the previous
iteration's tensor (its key's age). The reuse hazards (`hazards`), TL003's
classifier (`accumulation`) and the stale-graph check (`staleness`) all
walk this way."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Optional

from tapelint.analysis.model import AbstractNode, Carried, GraphValue, Loop, Tracked
from tapelint.analysis.state import Key, older


def key_of(node: AbstractNode, age: Optional[Loop]) -> Key:
    return (node, age if age is not None and age in node.loops else None)


def steps(value: GraphValue, age: Optional[Loop]) -> tuple[AbstractNode, Optional[Loop]]:
    if isinstance(value, Carried):
        return value.node, older(value.node, age, value.loop)
    return value, age


def walk(roots: Iterable[GraphValue]) -> Iterator[tuple[Key, list[Key]]]:
    """Every graph node a backward from `roots` runs (non-leaf, possibly
    tracked), with the keys of its parents that it will run next."""
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
        if node.leaf or node.tracked is Tracked.NO:
            continue
        children: list[Key] = []
        for parent in node.parents:
            p_node, p_age = steps(parent, age)
            children.append(key_of(p_node, p_age))
        yield key, children
        stack.extend(children)
