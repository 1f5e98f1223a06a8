"""The one question of `docs/analysis.md`, asked at every backward event: does this
walk reach a node that an earlier backward already released? — and, when it
does, which kind of reuse it is (which rule reports it).

Released keys (`state.Key`: a node and its age) flow forward through the
program with the abstract state; a backward that reaches one is a hazard, and
where the released node was created decides its kind. `HazardLog` records
them as the interpreter reports backward events.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.findings import (
    AccumulationHazard,
    CarriedHazard,
    Hazard,
    HazardKind,
    HoistedHazard,
    RepeatedHazard,
    RetainHazard,
    ReuseHazard,
    SharedHazard,
    StaleHazard,
)
from tapelint.analysis.model import (
    AbstractNode,
    BackwardEvent,
    Carried,
    GraphValue,
    Loop,
    Retains,
    StepEvent,
    TupleVal,
    container_key,
)
from tapelint.analysis.names import ModuleNames
from tapelint.analysis.staleness import module_name, stale_walks
from tapelint.analysis.state import Key, State
from tapelint.analysis.store import StoreView
from tapelint.analysis.syntax import keyword_arg, walk_nodes
from tapelint.analysis.walks import Iterations, key_of, steps, walk
from tapelint.ops import Saves


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


def find_reuse(roots: Iterable[GraphValue], graph: dict[Key, list[Key]],
               released: dict[Key, BackwardEvent]) -> list[Reuse]:
    """The released regions a walk from `roots` (running `graph`) enters, one per frontier."""
    frontiers: list[Key] = []
    seen: set[Key] = set()
    stack = [k for k in (key_of(*steps(r, None)) for r in roots)]
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


class HazardLog:
    """The hazards of one module, recorded as backward events happen."""

    def __init__(self, store: StoreView, names: ModuleNames) -> None:
        self.store = store
        self.names = names  # the module's parents, for the statement of a call
        self.hazards: dict[tuple, ReuseHazard | RetainHazard | StaleHazard] = {}
        self.reused_nodes: dict[tuple, AbstractNode] = {}  # hazard key -> the reused node

    def on_backward(self, event: BackwardEvent, roots: Sequence[GraphValue], state: State) -> None:
        """Check a walk from `roots` (what `event` walks in this pass: its
        roots joined over the passes may hold another iteration's) against what
        earlier walks released, then release (or retain) what it walks."""
        first = frozenset(self.store.first_iterations)
        where = Iterations(first.intersection(event.loops), frozenset(event.loops) - first)
        graph = dict(walk(roots, where))  # what the walk runs, in walk order
        # What only a strict tape runs: the history of an `autograd.grad`'s
        # inputs (PyTorch stops there; burn's backward consumes the whole tape).
        torch_graph = dict(walk(roots, where, event.inputs)) if event.inputs else graph
        beyond = graph.keys() - torch_graph.keys()
        stale = stale_walks(torch_graph, roots, state, self.store)
        if stale:
            self._record_stale(event, stale[0], state)
        stale_keys = {key for key, _ in stale}
        # A node reached both as this pass's and as an earlier iteration's
        # (`age`) is one hazard: the walk within the pass fails first, so it
        # is recorded first, whatever order the walk met them in.
        for reuse in sorted(find_reuse(roots, graph, state.released), key=lambda r: r.frontier[1] is not None):
            self._record_reuse(event, roots, reuse, state, strict_only=reuse.frontier in beyond)
        self._check_retained(event, graph, state)
        kept_stale = any(key in state.kept for key in stale_keys)
        for reuse in find_reuse(roots, graph, state.kept):
            if kept_stale or stale_keys.intersection(reuse.group):
                continue  # a step changed what the kept graph saved: TL007 says why this backward fails, under both
            if not any(isinstance(h, RetainHazard) and h.first_backward.call is reuse.first.call
                       for h in self.hazards.values()):  # (the call: a step method runs twice, its events apart)
                self._record_reuse(event, roots, reuse, state, strict_only=True)
        if event.retains is Retains.NO:
            for key in graph:
                if key in beyond:
                    state.kept.setdefault(key, event)  # consumed by a strict tape; PyTorch ran none of it
                    continue
                state.released.setdefault(key, event)
                state.retained.pop(key, None)
        elif event.retains is Retains.YES and not event.is_grad and not event.creates_graph:
            for key in graph:
                state.retained[key] = event  # the latest retain is the one the next backward relies on
                state.kept.setdefault(key, event)

    def found(self, except_nodes: set[int]) -> list[Hazard]:
        """Every hazard found, one per root cause: except those whose reused node
        is in `except_nodes` (ids of running totals that TL003 reports), and with
        the walks into the same released ground merged (`one_per_cause`)."""
        found = [(self.reused_nodes.get(key), h) for key, h in self.hazards.items()
                 if id(self.reused_nodes.get(key)) not in except_nodes]
        return one_per_cause(found)

    def _record_reuse(self, event: BackwardEvent, roots: Sequence[GraphValue], reuse: Reuse, state: State,
                      strict_only: bool = False) -> None:
        """Turn a walk into released (or, `strict_only`, retained) ground into
        a hazard of the kind that where the reused node was created decides."""
        node, age = reuse.frontier
        first = reuse.first
        if not self.store.is_tracked(node):
            return  # unknown provenance: never a confident report
        loop: Optional[Loop] = None
        name = self.store.display_name(node)
        real_roots = [r.node if isinstance(r, Carried) else r for r in roots]
        if first is event:
            if age is None:
                outside = [lp for lp in event.loops if lp not in node.loops]
                if not outside:
                    return
                loop = outside[-1]
                kind = HazardKind.REPEATED if any(node is r for r in real_roots) else HazardKind.HOISTED
            else:
                loop = age
                kind = HazardKind.CARRIED if feeds_itself(node, age) else HazardKind.HOISTED
                stand_in = self.store.stand_in(node, age)
                if kind is HazardKind.CARRIED and stand_in is not None and stand_in.name:
                    name = stand_in.name
        else:
            first_roots = [r.node if isinstance(r, Carried) else r for r in first.roots]
            same_root = any(node is r for r in real_roots) and any(node is r for r in first_roots)
            kind = HazardKind.REPEATED if same_root else HazardKind.SHARED
            if age is not None:
                loop = age
        key = (kind, event.call, first.call, node.site)
        fails_under_torch = reuse.fails_under_torch and not strict_only
        saves_assumed = fails_under_torch and reuse.saves_assumed
        op = ", ".join(reuse.assumed_ops)
        kept = self.hazards.get(key)
        if kept is not None:
            # The same walk met again on a later loop pass, when more of the released
            # ground behind it is known: what it now finds saved counts too, or the
            # verdict would be whichever pass (in the order of sets) came first.
            if isinstance(kept, ReuseHazard) and fails_under_torch and (
                    not kept.fails_under_torch or (kept.saves_assumed and not saves_assumed)):
                self.hazards[key] = replace(kept, fails_under_torch=True, saves_assumed=saves_assumed, op=op)
            return
        self.reused_nodes[key] = node
        hazard: ReuseHazard
        if kind is HazardKind.CARRIED:
            assert loop is not None
            hazard = CarriedHazard(name, node.site, fails_under_torch, saves_assumed, strict_only, op, first, event,
                                   (), loop=loop, anchor=_call_in(event.context, node.context),
                                   remade_in_inner_loop=node.loops[-1] is not loop)
        elif kind is HazardKind.HOISTED:
            assert loop is not None
            hazard = HoistedHazard(name, node.site, fails_under_torch, saves_assumed, strict_only, op, first, event,
                                   (), loop=loop, earlier_iteration=age is not None,
                                   kept_in=self._container_holding(node, state) if age is not None else None,
                                   anchor=self._hoisting_call(event, node, loop, state) if age is None else None)
        elif kind is HazardKind.REPEATED:
            hazard = RepeatedHazard(name, node.site, fails_under_torch, saves_assumed, strict_only, op, first, event,
                                    (), loop=loop)
        else:
            hazard = SharedHazard(name, node.site, fails_under_torch, saves_assumed, strict_only, op, first, event,
                                  (), loop=loop)
        self.hazards[key] = hazard

    def _record_stale(self, event: BackwardEvent, hit: tuple[Key, StepEvent], state: State) -> None:
        """One stale-graph finding per backward (per call here that runs it): the first stale node it meets."""
        key, step = hit
        scope = _shared_prefix(event.context, step.context)
        fails_site = _call_in(scope, event.context) or event.call
        hkey = (HazardKind.STALE, event.call, fails_site)
        if hkey in self.hazards:
            return
        node, age = key
        stand_in = self.store.stand_in(node, age) if age is not None else None
        self.reused_nodes[hkey] = node
        self.hazards[hkey] = StaleHazard(
            value=stand_in.name if stand_in is not None and stand_in.name else self.store.display_name(node),
            definition=node.site,
            fails_under_torch=True,
            step=step,
            fails_at=event,
            fails_site=fails_site,
            step_site=_call_in(scope, step.context) or step.call,
            module=module_name(node, step, scope, self.store),
            kept_by=state.kept.get(key),
            loop=age,
            anchor=_call_in(scope, node.context),
        )

    def _hoisting_call(self, event: BackwardEvent, node: AbstractNode, loop: Loop, state: State) -> Optional[cst.Call]:
        """The call outside `loop`, in the scope that runs both it and the
        backward, that returned `node` made inside another function
        (`codes, _ = autoencoder(x)` before the loop, `code = self.encoder(x)`
        in `forward`): one of the names its assignment binds holds `node`
        still. None when `node` was made in that scope, by a call inside the
        loop (a cache filled on the first iteration), or kept by the call
        elsewhere (a closure it returns, a list on `self`)."""
        call = _call_in(_shared_prefix(event.context, node.context), node.context)
        if call is None or loop.implicit or _inside(call, loop.node):
            return None
        statement = self.names.parent(call)
        if not (isinstance(statement, cst.Assign) and statement.value is call and len(statement.targets) == 1):
            return None
        target = statement.targets[0].target
        bound = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        held = [v for t in bound if type(t) is cst_nodes.Name for v in state.env.get(t.value, ())]
        return call if any(v is node or (isinstance(v, TupleVal) and any(node in item for item in v.items))
                           for v in held) else None

    def _container_holding(self, node: AbstractNode, state: State) -> Optional[cst.CSTNode]:
        """Where the list or dict that holds `node` as an element was created
        (`self.saved_log_probs = []`), when one does: an earlier iteration's
        value reached through a container the loop keeps adding to."""
        for key, vals in state.env.items():
            if key.startswith("<list@") and any(v is node or (isinstance(v, Carried) and v.node is node)
                                                for v in vals):
                return self.store.list_site(container_key(key))
        return None

    def _check_retained(self, event: BackwardEvent, graph: dict[Key, list[Key]], state: State) -> None:
        if event.is_grad:
            return
        for key in graph:
            earlier = state.retained.get(key)
            if earlier is None or earlier is event or earlier.scope is not event.scope:
                continue
            node = key[0]
            if not self.store.is_tracked(node):
                continue
            hkey = (HazardKind.RETAIN_TO_COMBINE, earlier.call)
            chained = any(isinstance(h, RetainHazard) and h.fails_at is earlier for h in self.hazards.values())
            if hkey not in self.hazards and not chained:  # one finding per chain of retains
                self.hazards[hkey] = RetainHazard(
                    value=self.store.display_name(node),
                    definition=node.site,
                    fails_under_torch=False,
                    first_backward=earlier,
                    fails_at=event,
                    retain_arg=keyword_arg(earlier.call, "retain_graph"),
                )
            return


def one_per_cause(found: Sequence[tuple[Optional[AbstractNode], Hazard]]) -> list[Hazard]:
    """One hazard per released value: a reuse of the same node, released by
    the same first walk, reached again by another backward (the other arm of
    an if/else, a third walk) is the same hazard, and so is a reuse across
    iterations of a node TL001/TL005 already reports; the other backwards
    become `also_fails_at`. Reuses that fail under different semantics stay
    apart (each is reported under its own)."""
    out: list[Hazard] = []
    by_cause: dict[tuple, int] = {}
    by_node: dict[int, list[int]] = {}  # a node's TL001/TL005 hazards
    first = [(n, h) for n, h in found if isinstance(h, (HoistedHazard, CarriedHazard))]
    for node, hazard in first + [(n, h) for n, h in found if not isinstance(h, (HoistedHazard, CarriedHazard))]:
        if not isinstance(hazard, ReuseHazard) or node is None:
            out.append(hazard)
            continue
        verdict = _verdict(hazard)
        cause = (hazard.kind, id(node), hazard.first_backward.call, verdict)
        host = by_cause.get(cause)
        if host is None and isinstance(hazard, (SharedHazard, RepeatedHazard)):
            hosts = by_node.get(id(node), [])
            host = next((i for i in hosts if _verdict(out[i]) == verdict), hosts[0] if hosts else None)
            hosted = out[host] if host is not None else None
            if not isinstance(hosted, ReuseHazard) or not _walked_again_later(hazard, hosted):
                host = None
            elif _verdict(hosted) != verdict and not (hosted.fails_under_torch and not hazard.fails_under_torch):
                # (a strict-only walk into what the host reports under both says nothing more)
                if hazard.loop is not None or not hazard.fails_under_torch:
                    host = None  # each fails under its own semantics
                else:  # the other arm's walk frees it without retaining: PyTorch fails too
                    assert host is not None
                    out[host] = replace(hosted, fails_under_torch=True, saves_assumed=hazard.saves_assumed,
                                        retained=False, first_backward=hazard.first_backward)
        if host is None and isinstance(hazard, (HoistedHazard, CarriedHazard)):
            host = _same_definition(hazard, out, by_node.get(id(node), []))
            if host is not None:
                by_cause[cause] = host
                kept = out[host]
                assert isinstance(kept, ReuseHazard)
                if hazard.fails_under_torch and not kept.fails_under_torch:
                    out[host], hazard = hazard, kept  # the walk that frees it without retaining says more
        if host is None:
            by_cause[cause] = len(out)
            if isinstance(hazard, (HoistedHazard, CarriedHazard)):
                by_node.setdefault(id(node), []).append(len(out))
            out.append(hazard)
            continue
        kept = out[host]
        assert isinstance(kept, ReuseHazard)
        more = tuple(e for e in dict.fromkeys((hazard.fails_at,) + hazard.also_fails_at)
                     if e is not kept.fails_at and e not in kept.also_fails_at)
        if more:
            out[host] = replace(kept, also_fails_at=kept.also_fails_at + more)
    return out


def _same_definition(hazard: HoistedHazard | CarriedHazard, out: list[Hazard], hosts: list[int]) -> Optional[int]:
    """The TL001/TL005 hazard of the same kind already kept for the node,
    when one of the two fails under PyTorch and the other only under a
    strict tape (one arm's walk retains, the other's frees): one hazard at
    one definition, which fails under PyTorch."""
    for index in hosts:
        kept = out[index]
        if kept.kind is hazard.kind and isinstance(kept, ReuseHazard) \
                and kept.fails_under_torch != hazard.fails_under_torch:
            return index
    return None


def _verdict(hazard: Hazard) -> tuple[bool, bool]:
    """Under which semantics a reuse fails, and whether only because a retaining walk was trusted."""
    assert isinstance(hazard, ReuseHazard)
    return hazard.fails_under_torch, hazard.retained


def _walked_again_later(hazard: SharedHazard | RepeatedHazard, hosted: ReuseHazard) -> bool:
    """Is `hazard` the hoisted or carried value `hosted` walked again on a
    later iteration? It is when it comes from an earlier iteration, or when
    its two backwards sit in the two arms of one `if` in the hoisting loop
    (`hidden` built before the loop, or carried into it, backwarded in either
    arm: one iteration runs only one of them, so the second walk is always a
    later iteration's)."""
    if hazard.loop is not None:
        return True
    return isinstance(hosted, (HoistedHazard, CarriedHazard)) and _exclusive_arms(
        hosted.loop.node, hazard.first_backward.call, hazard.fails_at.call)


def _exclusive_arms(loop: cst.CSTNode, first: cst.CSTNode, second: cst.CSTNode) -> bool:
    """Do `first` and `second` sit in different arms of one `if` inside `loop`?"""
    for node in walk_nodes(loop):
        if type(node) is cst_nodes.If and node.orelse is not None:
            arms = (node.body, node.orelse)
            if any(_inside(first, a) and _inside(second, b) for a, b in (arms, arms[::-1])):
                return True
    return False


def _inside(node: cst.CSTNode, root: cst.CSTNode) -> bool:
    return any(n is node for n in walk_nodes(root))


def one_per_total(found: Iterable[AccumulationHazard]) -> list[AccumulationHazard]:
    """One TL003 hazard per total and loop: the statements of the arms of an
    if/else that add into the same total are one retention."""
    out: dict[tuple, AccumulationHazard] = {}
    for hazard in found:
        total = (_source(hazard.accumulator_target), hazard.loop, hazard.retention_with_backward)
        kept = out.get(total)
        out[total] = hazard if kept is None else replace(kept, also=kept.also + (hazard,))
    return list(out.values())


def _source(node: cst.CSTNode) -> str:
    return cst_nodes.Module(body=()).code_for_node(node)


def _shared_prefix(first: tuple, second: tuple) -> tuple:
    """The chain of inlined calls that two events share: the scope that runs both."""
    depth = 0
    while depth < min(len(first), len(second)) and first[depth] is second[depth]:
        depth += 1
    return first[:depth]


def _call_in(scope: tuple, context: tuple) -> Optional[cst.Call]:
    """The call written in `scope` through which code running under
    `context` ran (`self._update(opt, loss)` for its `opt.step()`); None when
    it runs in `scope` itself, or outside it."""
    depth = len(scope)
    if context[:depth] == scope and len(context) > depth and type(context[depth]) is cst_nodes.Call:
        return context[depth]
    return None
