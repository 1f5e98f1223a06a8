"""What a detach would leave of a backward's graph, asked of the abstract
graph the analysis built (`analysis.model`): a detach edit is offered only
where the backward still reaches a trainable leaf without the detached
value, so the fixed program never backwards a graph-free root
("element 0 of tensors does not require grad") or trains nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Optional

import libcst as cst

from tapelint.analysis.findings import Hazard
from tapelint.analysis.model import AbstractNode, BackwardEvent, Carried, GraphValue, Tracked


def remember(hazards: Iterable[Hazard]) -> None:
    """Copy the graph behind the backwards of these hazards onto each event
    (`BackwardEvent.reach`), before the driver releases the graph
    (`NodeStore.release` clears the parents to break its cycles): the copy
    lives as long as the event, that is while its file is reported."""
    for hazard in hazards:
        for event in (getattr(hazard, "first_backward", None), getattr(hazard, "fails_at", None)):
            if isinstance(event, BackwardEvent) and event.reach is None:
                event.reach = _copy(event.roots)


def _copy(roots: Iterable[GraphValue]) -> dict[int, tuple[AbstractNode, ...]]:
    graph: dict[int, tuple[AbstractNode, ...]] = {}
    stack = [_node(r) for r in roots]
    while stack:
        node = stack.pop()
        if id(node) in graph:
            continue
        graph[id(node)] = parents = tuple(_node(p) for p in node.parents)
        stack.extend(parents)
    return graph


def _node(value: GraphValue) -> AbstractNode:
    return value.node if isinstance(value, Carried) else value


def _made_at(node: AbstractNode, site: cst.CSTNode) -> Optional[int]:
    """How deep in calls `site` made `node`: created there (its own depth),
    or inside a call at `site` (`encoder(x)` running `forward`, in another
    file too: the hazard is then placed at that call). None: not at all."""
    if node.site is site:
        return len(node.context)
    return next((i for i, call in enumerate(node.context) if call is site), None)


def nodes_at(event: BackwardEvent, site: cst.CSTNode) -> Iterator[tuple[AbstractNode, int]]:
    """The nodes made at `site` that the backward walks, with the depth."""
    for node in _walk(event, lambda n: False):
        depth = _made_at(node, site)
        if depth is not None:
            yield node, depth


def reaches_leaf_without(event: BackwardEvent, site: cst.CSTNode) -> bool:
    """Does every root of the backward (each alternative of a value bound
    under `if`/`elif`, each loss of `autograd.backward([...])`), not passing
    through nodes made at `site`, reach a tracked leaf (a parameter, a
    `requires_grad=True` tensor)? False when its graph was not remembered:
    then nothing is known, and no edit made."""
    def blocked(node: AbstractNode) -> bool:
        return _made_at(node, site) is not None

    return bool(event.roots) and all(
        any(n.leaf and n.tracked is Tracked.YES for n in _walk(event, blocked, (root,))) for root in event.roots)


def _walk(event: BackwardEvent, blocked, roots: Optional[Iterable[GraphValue]] = None) -> Iterator[AbstractNode]:
    graph = event.reach or {}
    seen: set[int] = set()
    stack = [_node(r) for r in (event.roots if roots is None else roots)]
    while stack:
        node = stack.pop()
        if id(node) in seen or blocked(node) or id(node) not in graph:
            continue
        seen.add(id(node))
        yield node
        stack.extend(graph[id(node)])


def created_in_callee(event: BackwardEvent, site: cst.CSTNode) -> bool:
    """Is the value at `site` created inside a function that the backward's
    scope called (its node made under a deeper chain of inlined calls)? An
    edit there would change every other caller of that function."""
    depth = len(event.context)
    return any(at > depth or n.context[:depth] != event.context for n, at in nodes_at(event, site))


def built_within(event: BackwardEvent, site: cst.CSTNode, within) -> bool:
    """Is the graph behind the value at `site`, down to its leaves, built by
    the code that `within(node_site)` accepts? Recomputing a statement inside
    the loop helps only then: a tracked non-leaf it reads from elsewhere
    (`old_log_probs = old_dist.log_prob(a)`, `old_dist` built before the
    loop) would still be walked again on every iteration."""
    found = [node for node, _ in nodes_at(event, site)]
    if not found:
        return False
    graph = event.reach or {}
    seen: set[int] = set()
    stack = list(found)
    while stack:
        node = stack.pop()
        if id(node) in seen or node.leaf or node.tracked is Tracked.NO:
            continue
        seen.add(id(node))
        if not within(node.site) and not any(within(call) for call in node.context):
            return False  # neither built there nor under a call made there (`encoder(x)`'s forward)
        stack.extend(graph.get(id(node), ()))
    return True
