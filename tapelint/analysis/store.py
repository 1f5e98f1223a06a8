"""The node store: every abstract node, container, function reference,
carried stand-in and backward event of one module, memoised by where it is
created (site, call context, loops), so each loop pass sees the same object
and only adds to it — which is how the loop fixed point is detected.

`StoreView` is the read-only face the hazard classifiers get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, Protocol

import libcst as cst

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.model import (
    CLOCK,
    AbstractNode,
    BackwardEvent,
    Carried,
    FunctionRef,
    GraphValue,
    ListRef,
    Loop,
    ModuleRef,
    ObjectRef,
    Retains,
    Tracked,
    TupleVal,
    Value,
    tuple_of,
)
from tapelint.analysis.shapes import ValueShape, joined, shape_of
from tapelint.analysis.state import State, Vals
from tapelint.analysis.walks import DeadReleases
from tapelint.ops import Saves


class Placement(Protocol):
    """Where something is created: the chain of inlined calls and the loops around it."""

    context: tuple
    loops: tuple[Loop, ...]


class StoreView(Protocol):
    """What the hazard classifiers read of the store."""

    @property
    def events(self) -> Mapping[tuple, BackwardEvent]: ...

    @property
    def first_iterations(self) -> tuple[Loop, ...]: ...

    def is_tracked(self, node: AbstractNode) -> bool: ...

    def stand_in(self, node: AbstractNode, loop: Loop) -> Optional[Carried]: ...

    def display_name(self, node: AbstractNode) -> str: ...

    def list_site(self, key: str) -> Optional[cst.CSTNode]: ...


@dataclass
class LoopRun:
    """One run of a loop under way (`run_loop`), by the clock
    (`model.CLOCK`): when it began, when its current pass began, and
    whether that pass read a node that then grew (`NodeStore.grew`)."""

    began: int
    pass_began: int
    reread: bool = False


class NodeStore:
    """Owns the abstract graph of one module."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.nodes: dict[tuple, AbstractNode] = {}
        self.lists: dict[tuple, ListRef] = {}
        self._slot_names: dict[str, set[str]] = {}  # a mapping's key -> its literal keys ever stored
        # The keys of the containers created under each call chain and every
        # chain it extends (`lists_within`, asked at every inlined call).
        self._lists_under: dict[tuple, set[str]] = {}
        self.function_refs: dict[tuple, FunctionRef] = {}
        self.hooked = False  # a node has a `register_hook` function: backwards run it
        self.objects: dict[tuple, ObjectRef] = {}
        self.carried: dict[tuple, Carried] = {}
        # (id of a tuple, loop) -> (the tuple, kept alive for its id; what it carries to)
        self.carried_tuples: dict[tuple, tuple[TupleVal, TupleVal]] = {}
        self._loops: dict[tuple, Loop] = {}
        self.events: dict[tuple, BackwardEvent] = {}
        self.first_iterations: tuple[Loop, ...] = ()  # the loops whose first iteration is being run
        # Where the nodes a backward proved tracked were made: the same code run
        # at another call (`fast_adapt` for meta-training, backwarded, then for
        # meta-validation) makes a tensor of the same kind from the same kind of inputs.
        self.proven_sites: set[cst.CSTNode] = set()
        self.changes = 0  # grows whenever the graph does: the loop fixed point's test
        self.runs: list[LoopRun] = []  # the loop runs under way, outermost first
        self.dead_releases = DeadReleases()  # `walks.without_dead_releases`' answers since the graph last changed
        self.order = 0
        # What each evaluated expression held, joined over its evaluations
        # (`analysis.shapes`): the fixes' "is this a tensor?".
        self.shapes: dict[cst.CSTNode, ValueShape] = {}
        self.bound_shapes: dict[str, ValueShape] = {}  # the same per name or attribute path bound

    def loop(self, node: cst.CSTNode, implicit: bool = False, label: str = "") -> Loop:
        """The one `Loop` of this statement (or step function): every run of
        it, in every call context, is the same loop."""
        key = (node, implicit, label)
        found = self._loops.get(key)
        if found is None:
            found = self._loops[key] = Loop(node, implicit, label)
        return found

    def node(
        self,
        where: Placement,
        state: State,
        site: cst.CSTNode,
        op: str,
        parents: Sequence,
        saves: Saves,
        tracked: Optional[Tracked] = None,
        leaf: bool = False,
    ) -> AbstractNode:
        """The abstract node for `site` at `where` (memoised, so every loop
        pass sees the same node and only adds to it)."""
        if state.no_grad:
            parents, tracked = (), Tracked.NO
        graph_parents = [p for p in parents if isinstance(p, (AbstractNode, Carried))]
        if tracked is None:
            tracked = Tracked.union([p.tracked for p in graph_parents]) if graph_parents else Tracked.NO
        key = (site, where.context, where.loops)
        existing = self.nodes.get(key)
        # (made outside every loop: one variant, the union itself, kept nowhere else)
        later = frozenset(loop for loop in where.loops if loop not in self.first_iterations)
        if existing is None:
            unique = list(dict.fromkeys(graph_parents))
            node = AbstractNode(site, where.loops, tracked, leaf, saves, op, unique,
                                {later: list(unique)} if where.loops else {}, context=where.context,
                                made=len(self.nodes))
            self.nodes[key] = node
            self.changes += 1
            return node
        changes = self.changes
        these = None
        new_iteration = False  # (no change of the graph, but of what `walks.parents_of` reads)
        if where.loops:
            these = existing.edges_when.get(later)
            if these is None:
                these = existing.edges_when[later] = []
                new_iteration = True
        for parent in graph_parents:
            if not any(parent is p for p in existing.edges):
                existing.edges.append(parent)
                self.changes += 1
            if these is not None and not any(parent is p for p in these):
                these.append(parent)
                self.changes += 1
        if new_iteration or self.changes != changes:
            self.grew(existing)
        joined = Tracked.union([existing.tracked, tracked])
        if joined is not existing.tracked:
            existing.tracked = joined
            self.changes += 1
            self.grew(None)  # (read wherever the node is: not stamped)
        return existing

    def note_shape(self, expr: cst.CSTNode, vals: Vals) -> None:
        shapes = self.shapes
        old = shapes.get(expr)
        if old is not ValueShape.OTHER:
            shapes[expr] = joined(old, shape_of(vals))

    def note_binding(self, key: str, vals: Vals) -> None:
        shapes = self.bound_shapes
        old = shapes.get(key)
        if old is not ValueShape.OTHER:
            shapes[key] = joined(old, shape_of(vals))

    def existing(self, site: cst.CSTNode, where: Placement) -> Optional[AbstractNode]:
        """The node already created for `site` at `where`, if any."""
        return self.nodes.get((site, where.context, where.loops))

    def new_list(self, site: cst.CSTNode, where: Placement, mapping: bool = False) -> ListRef:
        key = (site, where.context, where.loops)
        lst = self.lists.get(key)
        if lst is None:
            lst = self.lists[key] = ListRef(site, where.loops, mapping)
            context = where.context
            if type(context) is tuple:
                for depth in range(len(context) + 1):
                    self._lists_under.setdefault(context[:depth], set()).add(lst.key)
        return lst

    def slot_names(self, lst: ListRef) -> set[str]:
        """The literal keys a mapping ever held in a slot (`analysis.mappings`)."""
        return self._slot_names.setdefault(lst.key, set())

    def list_site(self, key: str) -> Optional[cst.CSTNode]:
        """Where the container whose state key is `key` was created."""
        return next((lst.site for lst in self.lists.values() if lst.key == key), None)

    def new_object(self, cls: cst.ClassDef, site: cst.CSTNode, where: Placement) -> ObjectRef:
        """The instance of `cls` created at `site` at `where` (memoised, like a list)."""
        key = (site, where.context, where.loops)
        obj = self.objects.get(key)
        if obj is None:
            obj = self.objects[key] = ObjectRef(cls, site, len(self.objects))
        return obj

    def lists_within(self, context: tuple) -> frozenset[str]:
        """The state keys of the containers created under the call chain
        `context` (in that call or deeper): each call creates them afresh."""
        return frozenset(self._lists_under.get(context, ()))

    def function_ref(self, fn: cst.FunctionDef, context: tuple, loops: tuple[Loop, ...]) -> FunctionRef:
        key = (fn, context, loops)
        ref = self.function_refs.get(key)
        if ref is None:
            ref = self.function_refs[key] = FunctionRef(fn)
        return ref

    def parameter_leaf(self, module: ModuleRef) -> AbstractNode:
        """The parameters of a module, as one leaf per module (its construction
        site or user class: `ModuleRef.owner`) and trackedness. The leaf's site
        is that owner and its op the module's class (what it saves, TL007)."""
        tracked = Tracked.YES if module.parametric and not module.frozen else Tracked.NO
        owner = module.owner
        key = ("<parameters>", module.class_name, tracked, owner)
        node = self.nodes.get(key)
        if node is None:
            node = AbstractNode(owner if owner is not None else self.module, (), tracked, True, Saves.NOTHING,
                                module.class_name)
            self.nodes[key] = node
        return node

    def element(self, result: AbstractNode, key: str) -> AbstractNode:
        """`result[key]` for the result of a call the analysis cannot see into,
        indexed by a string (so a dict of tensors, not a tensor): one tensor
        per key, made from what the call was given. Two keys' walks meet only
        in those inputs, not in the call's own unknown graph: a policy's
        `out['log_pi']` and a critic's `out['v']` are not taken for one tensor
        (the same key walked twice still is)."""
        memo = ("<element>", id(result), key)
        node = self.nodes.get(memo)
        if node is None:
            name = f"{result.name}[{key!r}]" if result.name else None
            node = AbstractNode(result.site, result.loops, result.tracked, False, Saves.UNKNOWN,
                                result.op, list(result.parents), name=name, context=result.context)
            self.nodes[memo] = node
            self.changes += 1
        changes, variants = self.changes, len(node.edges_when)
        pairs = [(node.edges, result.parents)]
        pairs += [(node.edges_when.setdefault(when, []), theirs) for when, theirs in result.parents_when.items()]
        for mine, theirs in pairs:
            for parent in theirs:
                if not any(parent is p for p in mine):
                    mine.append(parent)
                    self.changes += 1
        if self.changes != changes or len(node.edges_when) != variants:
            self.grew(node)
        return node

    def event(self, call: cst.Call, where: Placement, roots: list[GraphValue], retains: Retains,
              scope: cst.CSTNode, api: str, is_grad: bool, creates: bool) -> BackwardEvent:
        """The backward event of `call` at `where` (memoised; a later pass adds roots)."""
        key = (call, where.context, where.loops)
        event = self.events.get(key)
        if event is None:
            self.order += 1
            event = BackwardEvent(call, roots, retains, where.loops, self.order, scope, api, is_grad, creates,
                                  where.context)
            self.events[key] = event
        else:
            for root in roots:
                if not any(root is r for r in event.roots):
                    event.roots.append(root)
                    self.grew(None)
        return event

    def carry(self, value: Value, loop: Loop) -> Value:
        """`value` as seen from the next iteration of `loop`: a tuple is
        looked into once per loop (every pass of the loop carries it again),
        and is itself when nothing in it was made in the loop."""
        if isinstance(value, AbstractNode) and loop in value.loops:
            key = (id(value), loop)
            stand_in = self.carried.get(key)
            if stand_in is None:
                stand_in = self.carried[key] = Carried(value, loop)
            return stand_in
        if isinstance(value, TupleVal):
            key = (id(value), loop)
            known = self.carried_tuples.get(key)
            if known is None:
                items = tuple(frozenset([self.carry(v, loop) for v in item]) for item in value.items)
                same = all(new == old for new, old in zip(items, value.items))
                known = self.carried_tuples[key] = (value, value if same else tuple_of(items, value.record))
            return known[1]
        return value

    # ------------------------------------------------------- loop fixed points

    def begin_run(self) -> LoopRun:
        """A loop's run begins (`run_loop`); its passes begin with `begin_pass`."""
        now = CLOCK.tick()
        run = LoopRun(now, now)
        self.runs.append(run)
        return run

    def begin_pass(self, run: LoopRun) -> None:
        run.pass_began = CLOCK.tick()
        run.reread = False

    def end_run(self) -> None:
        self.runs.pop()

    def grew(self, node: Optional[AbstractNode]) -> None:
        """`node`'s parents grew (None: something read without a stamp did: a
        node's trackedness, a backward's roots, the sites proven tracked). Each
        loop run under way whose current pass read `node` before it grew must
        run again: another pass from the same head could read it differently.
        A read inside a loop run nested in that pass is the nested run's own:
        its passes settle it. Every read of parents is stamped
        (`AbstractNode.parents`). Most passes grow nothing they read before:
        a node is made or grown at its site before anything made from it
        reads it."""
        runs = self.runs
        if node is None:
            for run in runs:
                run.reread = True
            return
        read = node.read
        inner_began = None  # when the run nested in this one's pass began
        for run in reversed(runs):
            if run.pass_began <= read and (inner_began is None or read < inner_began):
                run.reread = True
            inner_began = run.began

    def stand_in(self, node: AbstractNode, loop: Loop) -> Optional[Carried]:
        return self.carried.get((id(node), loop))

    def prove(self, event: BackwardEvent) -> None:
        """A backward proves its roots tracked."""
        self.prove_walked(root.node if isinstance(root, Carried) else root for root in event.roots)

    def prove_walked(self, nodes: Iterable[AbstractNode]) -> None:
        """A backward walks `nodes`: they, and what their sites make wherever
        they run, are tracked (a leaf proves nothing of how it was made)."""
        proven = len(self.proven_sites)
        self.proven_sites.update(node.site for node in nodes if not node.leaf)
        if len(self.proven_sites) != proven:
            self.grew(None)  # (`is_tracked` reads them)

    def is_tracked(self, node: AbstractNode) -> bool:
        """Known to carry a graph: tracked by construction, or derived from a
        value that a backward walked (a backward proves its root tracked)."""
        if node.tracked is Tracked.YES:
            return True
        if node.tracked is Tracked.NO:
            return False
        seen: set[int] = set()
        stack: list = [node]
        while stack:
            value = stack.pop()
            if isinstance(value, Carried):
                value = value.node
            if id(value) in seen or value.tracked is Tracked.NO:
                continue
            if value.site in self.proven_sites:
                return True
            seen.add(id(value))
            stack.extend(value.parents)
        return False

    def display_name(self, node: AbstractNode) -> str:
        """The user's name for a node, or its abbreviated source."""
        if node.name:
            return node.name
        return abbreviate(self.module.code_for_node(node.site))

    def release(self) -> None:
        """Break the abstract graph's cycles (loop back edges, closures that
        hold the state they were made in) and forget the walks' answers once
        the hazards are known, so the syntax tree they point into is freed
        as soon as its file is done, by reference counting, not at the next
        full collection."""
        for node in self.nodes.values():
            node.edges.clear()
            node.edges_when.clear()
        for ref in self.function_refs.values():
            ref.closure = None
        self.dead_releases = DeadReleases()
