"""Provenance analysis: an abstract interpreter over the libcst tree.

It runs each scope (module, function, method) once in program order with an
abstract state — which graph nodes every name, attribute and container may
hold, which graph regions earlier backwards released — iterating loops to a
fixed point, so that values crossing a loop's back edge become `Carried`
stand-ins. Backward events ask `hazards.find_reuse`; accumulations are
recorded for TL003. Rules turn the resulting `Hazard`s into diagnostics.

Precision first: a node is reported only when it is known to carry a graph
(`Tracked.YES`, or a root that a backward proved tracked); unknown calls,
parameters and unresolved names stay `UNKNOWN` and never produce an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from tapelint import ops
from tapelint.analysis import hazards
from tapelint.analysis import accumulation
from tapelint.analysis.accumulation import Accumulation, accumulation_hazards
from tapelint.analysis.imports import ImportMap, dotted_name
from tapelint.analysis.syntax import walk_statements
from tapelint.literals import call_arguments
from tapelint.analysis.model import (
    OPAQUE,
    SELF,
    AbstractNode,
    BackwardEvent,
    Carried,
    ClassRef,
    FunctionRef,
    Hazard,
    HazardKind,
    ListRef,
    Loop,
    ModuleRef,
    Retains,
    SelfRef,
    Tracked,
    TupleVal,
    tuple_of,
    Value,
)
from tapelint.ops import Saves
from tapelint.settings import Settings

Vals = frozenset  # frozenset[Value]
EMPTY: Vals = frozenset()
Key = hazards.Key

MAX_PASSES = 4  # loop fixed-point iterations; the lattice is shallow
# Statements interpreted per line of the module (loops and inlining
# re-run bodies); past it the remaining scopes are skipped, so a pathological
# file costs bounded time instead of hanging the run.
WORK_PER_LINE = 20
MIN_WORK = 20_000
INLINE_DEPTH = 3
INLINE_BUDGET = 300  # inlined calls per module, to bound the cost on huge files

_BINARY_SYMBOLS = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/",
    cst.FloorDivide: "//", cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@",
}
_AUG_SYMBOLS = {
    cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
    cst.MatrixMultiplyAssign: "@",
}
_FACTORIES = frozenset(
    (
        "tensor", "as_tensor", "from_numpy", "randn", "rand", "randint", "randperm", "zeros",
        "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "normal",
        "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
        "randint_like", "Tensor", "FloatTensor", "LongTensor", "scalar_tensor", "tril_indices",
    )
)
_NO_GRAD_CONTEXTS = frozenset(
    ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode",
     "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode")
)
_GRAD_CONTEXTS = frozenset(("torch.enable_grad", "torch.autograd.enable_grad"))
_SET_GRAD = frozenset(("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"))
_BACKWARD_RUNNERS = frozenset(
    ("accelerator", "fabric", "trainer", "model_engine", "engine", "booster", "strategy", "deepspeed_engine")
)
_PASS_THROUGH_BUILTINS = frozenset(
    ("list", "tuple", "sorted", "reversed", "iter", "next", "zip", "enumerate", "dict", "set", "filter", "map")
)
_MODULE_IDENTITY_METHODS = frozenset(
    ("to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16", "type", "share_memory")
)
_PARAMETER_METHODS = frozenset(("parameters", "named_parameters", "buffers", "named_buffers"))
_TENSOR_SELF_METHODS = frozenset(
    ("retain_grad", "register_hook", "zero_", "fill_", "normal_", "uniform_", "copy_", "requires_grad")
)
_BARRIER_METHODS = frozenset(("step", "zero_grad"))
_LIST_ADDERS = frozenset(("append", "extend", "insert", "add", "update", "setdefault", "appendleft"))
_LIST_GETTERS = frozenset(("pop", "get", "popleft", "values", "items", "copy"))


def analyze_module(module: cst.Module, settings: Settings, lines: int = 0) -> list[Hazard]:
    """Every hazard of one module; `lines`, its length, sizes the work budget."""
    analysis = ModuleAnalysis(module, settings, lines)
    analysis.run()
    found = analysis.results()
    analysis.release()
    return found


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

    def copy(self) -> "State":
        return State(dict(self.env), dict(self.released), dict(self.retained), dict(self.kept), self.no_grad)

    @staticmethod
    def join(a: "State", b: "State") -> "State":
        env = dict(a.env)
        for name, vals in b.env.items():
            env[name] = env[name] | vals if name in env else vals
        released = dict(b.released)
        released.update(a.released)
        retained = dict(b.retained)
        retained.update(a.retained)
        kept = dict(b.kept)
        kept.update(a.kept)
        return State(env, released, retained, kept, a.no_grad and b.no_grad)

    def same(self, other: "State") -> bool:
        return (
            self.env == other.env
            and self.released.keys() == other.released.keys()
            and self.retained.keys() == other.retained.keys()
            and self.kept.keys() == other.kept.keys()
            and self.no_grad == other.no_grad
        )


@dataclass
class ClassInfo:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    is_module: bool
    parametric: bool
    state: dict[str, Vals] = field(default_factory=dict)  # self.* after __init__ and setup methods


class OutOfBudget(Exception):
    """The module's interpretation budget is spent."""


class ModuleAnalysis:
    """Everything one module's analysis shares across its scopes."""

    def __init__(self, module: cst.Module, settings: Settings, lines: int = 0) -> None:
        self.module = module
        self.settings = settings
        self.imports = ImportMap.of(module)
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.nodes: dict[tuple, AbstractNode] = {}
        self.lists: dict[tuple, ListRef] = {}
        self.function_refs: dict[tuple, FunctionRef] = {}
        self.inlined_methods: set[cst.FunctionDef] = set()
        self.interpreted: set[cst.FunctionDef] = set()  # bodies run at some call site
        self.carried: dict[tuple, Carried] = {}
        self.events: dict[tuple, BackwardEvent] = {}
        self.hazards: dict[tuple, Hazard] = {}
        self.reused_nodes: dict[tuple, AbstractNode] = {}  # hazard key -> the reused node
        self.accumulations: dict[tuple, Accumulation] = {}
        self.loops_with_backward: set[Loop] = set()
        self.loop_sites: dict[Loop, tuple[Sequence[cst.CSTNode], int]] = {}
        self.proven: set[int] = set()  # ids of nodes a backward proved tracked
        self.changes = 0
        self.inline_budget = INLINE_BUDGET
        self.order = 0
        self.module_env: dict[str, Vals] = {}
        self.work_left = max(MIN_WORK, WORK_PER_LINE * lines)
        self.backward_names = frozenset(settings.backward_functions)
        self.tracked_names = frozenset(settings.tracked_functions)

    # ----------------------------------------------------------------- driver

    def run(self) -> None:
        body = self.module.body
        for stmt in body:
            if type(stmt) is cst.FunctionDef:
                self.functions[stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef:
                self.classes[stmt.name.value] = self._class_info(stmt)
        try:
            for info in self.classes.values():  # what instances hold, for calls in module code
                if "__init__" in info.methods:
                    info.state = self._analyze_function(info.methods["__init__"], info, {}, collect_self=True)
            top = Frame(self, scope=self.module, loops=(), context=(), owner=None, fallback=())
            self.module_env = top.exec_block(body, State({}, {}, {})).env
            # Callers before callees (scripts define helpers first): a function
            # already interpreted at a call site, with real arguments, needs no
            # second, less informed pass with unknown parameters.
            for fn in reversed(list(self.functions.values())):
                if fn not in self.interpreted:
                    self._analyze_function(fn, owner=None, initial={})
            for info in self.classes.values():
                self._analyze_class(info)
        except OutOfBudget:
            pass  # what was found so far stands; the rest of the module is not interpreted

    def spend(self) -> None:
        self.work_left -= 1
        if self.work_left < 0:
            raise OutOfBudget

    def release(self) -> None:
        """Break the abstract graph's cycles (loop back edges, closures that
        hold the state they were made in) once the hazards are known, so the
        syntax tree they point into is freed as soon as its file is done,
        by reference counting, not at the next full collection."""
        for node in self.nodes.values():
            node.parents.clear()
        for ref in self.function_refs.values():
            ref.closure = None

    def results(self) -> list[Hazard]:
        """Every hazard found. A running total that TL003 reports is not
        reported again as the reused node of a later walk: one finding, one
        root cause."""
        accumulated = accumulation_hazards(self)
        totals = {id(node) for node in accumulated}
        found = [h for key, h in self.hazards.items() if id(self.reused_nodes.get(key)) not in totals]
        return found + list(accumulated.values())

    def _class_info(self, node: cst.ClassDef) -> ClassInfo:
        methods = {s.name.value: s for s in node.body.body if type(s) is cst.FunctionDef}
        is_module = any(self._is_module_base(base.value) for base in node.bases)
        parametric = is_module and _creates_parameters(node, self)
        return ClassInfo(node, methods, is_module, parametric)

    def _is_module_base(self, expr: cst.BaseExpression) -> bool:
        name = dotted_name(expr)
        if name is None:
            return False
        resolved = self.imports.resolve(name) or ""
        if resolved in ("torch.nn.Module", "torch.nn.modules.module.Module", "pytorch_lightning.LightningModule",
                        "lightning.LightningModule", "lightning.pytorch.LightningModule"):
            return True
        local = self.classes.get(name)
        return local is not None and local.is_module

    def _analyze_class(self, info: ClassInfo) -> None:
        init = info.methods.get("__init__")
        if init is not None:
            info.state = self._analyze_function(init, owner=info, initial={}, collect_self=True)
        steps: list[cst.FunctionDef] = []
        extra: dict[str, Vals] = {}
        for name, fn in info.methods.items():
            if name == "__init__":
                continue
            before = len(self.events)
            leaves = self._analyze_function(fn, owner=info, initial=info.state, collect_self=True)
            if len(self.events) > before:
                steps.append(fn)  # runs a backward: a training step, called once per step
                continue
            for key, vals in leaves.items():
                extra[key] = extra.get(key, EMPTY) | vals
        for key, vals in extra.items():
            # Another method may run before every step (`set_input`, `select_action`):
            # what it leaves on `self` is not known to be computed once, unlike `__init__`'s.
            unknown = frozenset(OPAQUE if isinstance(v, (AbstractNode, Carried)) else v for v in vals)
            info.state[key] = info.state.get(key, EMPTY) | unknown
        for fn in steps:
            if fn in self.inlined_methods:
                continue  # a helper of another method (`backward_G()` of `optimize_parameters()`)
            self._analyze_function(fn, owner=info, initial=info.state, implicit_loop=True)

    def _analyze_function(
        self,
        fn: cst.FunctionDef,
        owner: Optional[ClassInfo],
        initial: dict[str, Vals],
        collect_self: bool = False,
        implicit_loop: bool = False,
    ) -> dict[str, Vals]:
        """Analyse `fn` on its own, its parameters unknown. Returns its final
        `self.*` bindings when asked (what `__init__` leaves on the object).
        A module function that runs a backward and has no loop of its own is
        a step function: it is analysed again as the body of an implicit loop."""
        before = len(self.events)
        leaves = self._run_function(fn, owner, initial, collect_self, implicit_loop)
        if owner is None and not implicit_loop and len(self.events) > before and not _has_loop(fn):
            self._run_function(fn, owner, initial, False, True)
        return leaves

    def _run_function(self, fn: cst.FunctionDef, owner: Optional[ClassInfo], initial: dict[str, Vals],
                      collect_self: bool, implicit_loop: bool) -> dict[str, Vals]:
        frame = Frame(self, scope=fn, loops=(), context=(fn,), owner=owner, fallback=(self.module_env,))
        state = State(dict(initial), {}, {}, no_grad=_is_no_grad_function(fn, self))
        frame.bind_parameters(fn, state, method=owner is not None, args=None)
        if implicit_loop:
            loop = Loop(fn, implicit=True, label=f"calls of {fn.name.value}()")
            state = frame.exec_loop(loop, lambda s: s, fn.body.body, state)
        else:
            state = frame.exec_block(fn.body.body, state)
        if not collect_self:
            return {}
        return {k: v for k, v in state.env.items() if k.startswith("self.") or k.startswith("<list@")}

    # ------------------------------------------------------------- node store

    def node(
        self,
        frame: "Frame",
        state: State,
        site: cst.CSTNode,
        op: str,
        parents: Sequence,
        saves: Saves,
        tracked: Optional[Tracked] = None,
        leaf: bool = False,
    ) -> AbstractNode:
        """The abstract node for `site` in this frame's context (memoised, so
        every loop pass sees the same node and only adds to it)."""
        if state.no_grad:
            parents, tracked = (), Tracked.NO
        graph_parents = [p for p in parents if isinstance(p, (AbstractNode, Carried))]
        if tracked is None:
            tracked = Tracked.join([p.tracked for p in graph_parents]) if graph_parents else Tracked.NO
        key = (site, frame.context, frame.loops)
        existing = self.nodes.get(key)
        if existing is None:
            node = AbstractNode(site, frame.loops, tracked, leaf, saves, op, list(dict.fromkeys(graph_parents)),
                                context=frame.context)
            self.nodes[key] = node
            self.changes += 1
            return node
        for parent in graph_parents:
            if not any(parent is p for p in existing.parents):
                existing.parents.append(parent)
                self.changes += 1
        joined = Tracked.join([existing.tracked, tracked])
        if joined is not existing.tracked:
            existing.tracked = joined
            self.changes += 1
        return existing

    def carry(self, value: Value, loop: Loop) -> Value:
        if isinstance(value, AbstractNode) and loop in value.loops:
            key = (id(value), loop)
            stand_in = self.carried.get(key)
            if stand_in is None:
                stand_in = self.carried[key] = Carried(value, loop)
            return stand_in
        if isinstance(value, TupleVal):
            return tuple_of(frozenset(self.carry(v, loop) for v in item) for item in value.items)
        return value

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
            if id(value) in self.proven:
                return True
            seen.add(id(value))
            stack.extend(value.parents)
        return False

    def note_loop_site(self, loop: Loop, block: Sequence[cst.CSTNode], index: int) -> None:
        """Remember where a loop sits, to read what follows it (TL003)."""
        self.loop_sites.setdefault(loop, (block, index))

    def note_accumulation(self, frame: "Frame", statement: cst.CSTNode, target: cst.BaseExpression,
                          lists: Sequence[ListRef], added: Vals, node: Optional[AbstractNode], state: State) -> None:
        accumulation.note(self, frame.loops, frame.context, statement, target, lists,
                          frame.graph_values(added, state), node, state.no_grad)

    # ------------------------------------------------------------- hazards

    def on_backward(self, event: BackwardEvent, state: State) -> None:
        self.loops_with_backward.update(event.loops)
        for root in event.roots:
            node = root.node if isinstance(root, Carried) else root
            if not node.leaf:
                self.proven.add(id(node))
        for reuse in hazards.find_reuse(event.roots, state.released):
            self._record_reuse(event, reuse)
        self._check_retained(event, state)
        for reuse in hazards.find_reuse(event.roots, state.kept):
            if not any(h.kind is HazardKind.RETAIN_TO_COMBINE and h.first_backward is reuse.first
                       for h in self.hazards.values()):
                self._record_reuse(event, reuse, strict_only=True)
        walked = [key for key, _ in hazards.walk(event.roots)]
        if event.retains is Retains.NO:
            for key in walked:
                state.released.setdefault(key, event)
                state.retained.pop(key, None)
        elif event.retains is Retains.YES and not event.is_grad and not event.creates_graph:
            for key in walked:
                state.retained[key] = event  # the latest retain is the one the next backward relies on
                state.kept.setdefault(key, event)

    def _record_reuse(self, event: BackwardEvent, reuse: hazards.Reuse, strict_only: bool = False) -> None:
        """Turn a walk into released (or, `strict_only`, retained) ground into
        a hazard of the kind that where the reused node was created decides."""
        node, age = reuse.frontier
        first = reuse.first
        if not self.is_tracked(node):
            return  # unknown provenance: never a confident report
        loop: Optional[Loop] = None
        name = self.display_name(node)
        real_roots = [r.node if isinstance(r, Carried) else r for r in event.roots]
        if first is event:
            if age is None:
                outside = [lp for lp in event.loops if lp not in node.loops]
                if not outside:
                    return
                loop = outside[-1]
                kind = HazardKind.REPEATED if any(node is r for r in real_roots) else HazardKind.HOISTED
            else:
                loop = age
                kind = HazardKind.CARRIED if hazards.feeds_itself(node, age) else HazardKind.HOISTED
                stand_in = self.carried.get((id(node), age))
                if kind is HazardKind.CARRIED and stand_in is not None and stand_in.name:
                    name = stand_in.name
        else:
            first_roots = [r.node if isinstance(r, Carried) else r for r in first.roots]
            same_root = any(node is r for r in real_roots) and any(node is r for r in first_roots)
            kind = HazardKind.REPEATED if same_root else HazardKind.SHARED
            if age is not None:
                loop = age
        key = (kind, event.call, first.call, node.site)
        if key in self.hazards:
            return
        self.reused_nodes[key] = node
        self.hazards[key] = Hazard(
            kind=kind,
            value=name,
            definition=node.site,
            anchor=_definition_site(node, event) if kind is HazardKind.CARRIED else None,
            fails_under_torch=reuse.fails_under_torch and not strict_only,
            saves_assumed=reuse.fails_under_torch and reuse.saves_assumed and not strict_only,
            retained=strict_only,
            op=", ".join(reuse.assumed_ops),
            loop=loop,
            first_backward=first,
            fails_at=event,
        )

    def _check_retained(self, event: BackwardEvent, state: State) -> None:
        if event.is_grad:
            return
        for key, _ in hazards.walk(event.roots):
            earlier = state.retained.get(key)
            if earlier is None or earlier is event or earlier.scope is not event.scope:
                continue
            node = key[0]
            if not self.is_tracked(node):
                continue
            hkey = (HazardKind.RETAIN_TO_COMBINE, earlier.call)
            chained = any(h.kind is HazardKind.RETAIN_TO_COMBINE and h.fails_at is earlier
                          for h in self.hazards.values())
            if hkey not in self.hazards and not chained:  # one finding per chain of retains
                self.hazards[hkey] = Hazard(
                    kind=HazardKind.RETAIN_TO_COMBINE,
                    value=self.display_name(node),
                    definition=node.site,
                    fails_under_torch=False,
                    saves_assumed=False,
                    first_backward=earlier,
                    fails_at=event,
                    retain_arg=_keyword(earlier.call, "retain_graph"),
                )
            return

    def display_name(self, node: AbstractNode) -> str:
        if node.name:
            return node.name
        text = self.module.code_for_node(node.site).strip()
        return text if len(text) <= 40 else text[:37] + "..."


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _literal_bool(expr: Optional[cst.BaseExpression]) -> Optional[bool]:
    if type(expr) is cst.Name and expr.value in ("True", "False"):
        return expr.value == "True"
    if type(expr) is cst.Integer:
        return expr.value not in ("0",)
    return None


class Frame:
    """One activation being interpreted: a scope, its loops, its call context."""

    def __init__(
        self,
        analysis: ModuleAnalysis,
        scope: cst.CSTNode,
        loops: tuple[Loop, ...],
        context: tuple,
        owner: Optional[ClassInfo],
        fallback: tuple[dict[str, Vals], ...],
        depth: int = 0,
    ) -> None:
        self.a = analysis
        self.scope = scope
        self.loops = loops
        self.context = context
        self.owner = owner
        self.fallback = fallback
        self.depth = depth
        self.returns: list[Vals] = []
        self.globals: set[str] = set()
        self.is_module = isinstance(scope, cst.Module)

    # ------------------------------------------------------------ statements

    def exec_block(self, body: Sequence[cst.CSTNode], state: State) -> State:
        for index, stmt in enumerate(body):
            self.a.spend()
            state = self.exec_stmt(stmt, state, body, index)
        return state

    def exec_stmt(self, stmt: cst.CSTNode, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                state = self.exec_small(small, state)
            return state
        if type(stmt) is cst.If:
            self.eval(stmt.test, state)
            then, other = state.copy(), state.copy()
            self._refine_none_test(stmt.test, then, other)
            then = self.exec_block(stmt.body.body, then)
            if stmt.orelse is None:
                pass
            elif type(stmt.orelse) is cst.If:
                other = self.exec_stmt(stmt.orelse, other, block, index)
            else:
                other = self.exec_block(stmt.orelse.body.body, other)
            return State.join(then, other)
        if type(stmt) is cst.For:
            return self.exec_for(stmt, state, block, index)
        if type(stmt) is cst.While:
            loop = Loop(stmt, label="while")
            self.a.note_loop_site(loop, block, index)

            def bind(s: State) -> State:
                self.eval(stmt.test, s)
                return s

            state = self.exec_loop(loop, bind, stmt.body.body, state)
            if stmt.orelse is not None:
                state = self.exec_block(stmt.orelse.body.body, state)
            return state
        if type(stmt) is cst.With:
            return self.exec_with(stmt, state)
        if type(stmt) is cst.Try or type(stmt).__name__ == "TryStar":
            return self.exec_try(stmt, state)
        if type(stmt) is cst.FunctionDef:
            key = (stmt, self.context, self.loops)
            ref = self.a.function_refs.get(key)
            if ref is None:
                ref = self.a.function_refs[key] = FunctionRef(stmt)
            if not self.is_module:
                ref.closure = state.env  # a closure sees its defining scope, later bindings included
            state.env[stmt.name.value] = frozenset((ref,))
            return state
        if type(stmt) is cst.ClassDef:
            info = self.a.classes.get(stmt.name.value)
            is_module = info.is_module if info else False
            parametric = info.parametric if info else False
            state.env[stmt.name.value] = frozenset((ClassRef(stmt, is_module, parametric),))
            return state
        if type(stmt) is cst.Match:
            self.eval(stmt.subject, state)
            ends = [self.exec_block(case.body.body, state.copy()) for case in stmt.cases]
            result = state
            for end in ends:
                result = State.join(result, end)
            return result
        return state

    def _refine_none_test(self, test: cst.BaseExpression, then: State, other: State) -> None:
        """`if h is None:` / `if h is not None:` — on the branch where the
        value is None it holds no graph (the first iteration of a carried
        hidden state)."""
        if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
            return
        comparison = test.comparisons[0]
        if not (type(comparison.comparator) is cst.Name and comparison.comparator.value == "None"):
            return
        key = self.target_key(test.left)
        if key is None:
            return
        if type(comparison.operator) is cst.Is:
            then.env[key] = EMPTY
        elif type(comparison.operator) is cst.IsNot:
            other.env[key] = EMPTY

    def exec_small(self, small: cst.BaseSmallStatement, state: State) -> State:
        if type(small) is cst.Assign:
            vals = self.eval(small.value, state)
            for target in small.targets:
                if type(target.target) is cst.Attribute and target.target.attr.value == "requires_grad":
                    self._set_requires_grad(target.target, _literal_bool(small.value), state)
                else:
                    self.bind(target.target, vals, state)
            self._note_assign_accumulation(small, state)
        elif type(small) is cst.AnnAssign:
            if small.value is not None:
                self.bind(small.target, self.eval(small.value, state), state)
        elif type(small) is cst.AugAssign:
            self.exec_augassign(small, state)
        elif type(small) is cst.Expr:
            self.eval(small.value, state)
        elif type(small) is cst.Return:
            if small.value is not None:
                self.returns.append(self.eval(small.value, state))
        elif type(small) in (cst.Global, cst.Nonlocal):
            self.globals.update(n.name.value for n in small.names)
        elif type(small) is cst.Del:
            self._delete(small.target, state)
        elif type(small) in (cst.Assert,):
            self.eval(small.test, state)
        elif type(small) is cst.Raise and small.exc is not None:
            self.eval(small.exc, state)
        return state

    def _delete(self, target: cst.BaseExpression, state: State) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._delete(element.value, state)
            return
        key = self.target_key(target)
        if key is not None:
            state.env.pop(key, None)

    def exec_for(self, stmt: cst.For, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
        iterable = self.eval(stmt.iter, state)
        elements = self.elements(iterable, state)
        self._freeze_parameters_loop(stmt, state)
        loop = Loop(stmt, label="for")
        self.a.note_loop_site(loop, block, index)

        def bind(s: State) -> State:
            self.bind(stmt.target, elements, s)
            return s

        state = self.exec_loop(loop, bind, stmt.body.body, state)
        if stmt.orelse is not None:
            state = self.exec_block(stmt.orelse.body.body, state)
        return state

    def exec_loop(
        self, loop: Loop, bind: Callable[[State], State], body: Sequence[cst.CSTNode], state: State
    ) -> State:
        """Iterate the body to a fixed point. What reaches the head again is
        carried: this iteration's nodes become `Carried` stand-ins, and so do
        the released regions, which are then "released by an earlier
        iteration"."""
        outer = self.loops
        self.loops = outer + (loop,)
        entry = state.copy()
        head = entry.copy()
        last = head
        try:
            for _ in range(MAX_PASSES):
                before = self.a.changes
                end = self.exec_block(body, bind(head.copy()))
                last = end
                new_head = State.join(entry, self._carry_state(end, loop))
                if new_head.same(head) and self.a.changes == before:
                    break
                head = new_head
        finally:
            self.loops = outer
        return State.join(entry, last)

    def _carry_state(self, state: State, loop: Loop) -> State:
        env: dict[str, Vals] = {}
        for name, vals in state.env.items():
            if not any(isinstance(v, (AbstractNode, TupleVal)) and v is not OPAQUE for v in vals):
                env[name] = vals  # nothing created in the loop: the same values next iteration
                continue
            carried = frozenset(self.a.carry(v, loop) for v in vals)
            for value in carried:
                if isinstance(value, Carried) and value.name is None and not name.startswith("<"):
                    value.name = name
            env[name] = carried

        def age(keys: dict[Key, BackwardEvent]) -> dict[Key, BackwardEvent]:
            """This iteration's tensors (and those of loops nested in this one)
            become "the previous iteration's"; older ones stay older."""
            aged: dict[Key, BackwardEvent] = {}
            for (node, when), event in keys.items():
                if loop in node.loops:
                    when = hazards.older(node, when, loop) if when is not None else loop
                aged.setdefault((node, when), event)
            return aged

        return State(env, age(state.released), age(state.retained), age(state.kept), state.no_grad)

    def exec_with(self, stmt: cst.With, state: State) -> State:
        no_grad = state.no_grad
        for item in stmt.items:
            expr = item.item
            func = expr.func if type(expr) is cst.Call else expr
            name = self.canonical(func)
            if name in _NO_GRAD_CONTEXTS:
                no_grad = True
                continue
            if name in _GRAD_CONTEXTS:
                no_grad = False
                continue
            if name in _SET_GRAD and type(expr) is cst.Call and expr.args:
                flag = _literal_bool(expr.args[0].value)
                if flag is not None:
                    no_grad = not flag
                continue
            vals = self.eval(expr, state)
            if item.asname is not None:
                self.bind(item.asname.name, vals, state)
        saved = state.no_grad
        state.no_grad = no_grad
        state = self.exec_block(stmt.body.body, state)
        state.no_grad = saved
        return state

    def exec_try(self, stmt: cst.CSTNode, state: State) -> State:
        body_end = self.exec_block(stmt.body.body, state.copy())
        if stmt.orelse is not None:
            body_end = self.exec_block(stmt.orelse.body.body, body_end)
        result = body_end
        for handler in stmt.handlers:
            start = State.join(state, body_end)
            if handler.name is not None:
                start.env.pop(handler.name.name.value if type(handler.name.name) is cst.Name else "", None)
            result = State.join(result, self.exec_block(handler.body.body, start))
        if stmt.finalbody is not None:
            result = self.exec_block(stmt.finalbody.body.body, result)
        return result

    def exec_augassign(self, stmt: cst.AugAssign, state: State) -> None:
        prior = self.eval(stmt.target, state)
        added = self.eval(stmt.value, state)
        symbol = _AUG_SYMBOLS.get(type(stmt.operator))
        lists = [v for v in prior if isinstance(v, ListRef)]
        if lists and symbol == "+":
            elements = self.elements(added, state)
            for lst in lists:
                state.env[lst.key] = state.env.get(lst.key, EMPTY) | elements
            self.a.note_accumulation(self, stmt, stmt.target, lists, elements, None, state)
            return
        parents = self.graph_values(prior, state) + self.graph_values(added, state)
        if not parents:
            self.bind(stmt.target, EMPTY, state)
            return
        node = self.a.node(self, state, stmt, symbol or "op", parents, ops.operator_saves(symbol or "?"))
        self.bind(stmt.target, frozenset((node,)), state)
        if symbol in ("+", "-"):
            self.a.note_accumulation(self, stmt, stmt.target, [], added, node, state)

    def _note_assign_accumulation(self, stmt: cst.Assign, state: State) -> None:
        """`total = total + x` (either order): the same accumulation as `+=`."""
        value = stmt.value
        if len(stmt.targets) != 1 or not type(value) is cst.BinaryOperation:
            return
        if not type(value.operator) in (cst.Add, cst.Subtract):
            return
        target = stmt.targets[0].target
        key = self.target_key(target)
        if key is None:
            return
        left, right = self.target_key(value.left), self.target_key(value.right)
        if key not in (left, right):
            return
        other = value.right if left == key else value.left
        node = self.a.nodes.get((value, self.context, self.loops))
        if node is not None:
            self.a.note_accumulation(self, stmt, target, [], self.eval_quiet(other, state), node, state)

    def eval_quiet(self, expr: cst.BaseExpression, state: State) -> Vals:
        """Re-read an operand already evaluated, without evaluating it again."""
        key = self.target_key(expr)
        if key is not None:
            return self.lookup(key, state)
        node = self.a.nodes.get((expr, self.context, self.loops))
        return frozenset((node,)) if node is not None else EMPTY

    def _freeze_parameters_loop(self, stmt: cst.For, state: State) -> None:
        """`for p in model.parameters(): p.requires_grad = False` freezes `model`."""
        it = stmt.iter
        if not (type(it) is cst.Call and type(it.func) is cst.Attribute):
            return
        if it.func.attr.value not in _PARAMETER_METHODS or not type(stmt.target) in (cst.Name, cst.Tuple):
            return
        code = self.a.module.code_for_node(stmt.body)
        if "requires_grad = False" not in code and "requires_grad_(False)" not in code:
            return
        key = self.target_key(it.func.value)
        if key is None:
            return
        vals = self.lookup(key, state)
        state.env[key] = frozenset(replace(v, frozen=True) if isinstance(v, ModuleRef) else v for v in vals)

    # ------------------------------------------------------------- binding

    def target_key(self, expr: cst.BaseExpression) -> Optional[str]:
        if type(expr) is cst.Name:
            return expr.value
        if type(expr) is cst.Attribute:
            return dotted_name(expr)
        if type(expr) is cst.Subscript:
            base = self.target_key(expr.value)
            return f"{base}[]" if base is not None else None
        return None

    def bind(self, target: cst.BaseExpression, vals: Vals, state: State) -> None:
        if type(target) in (cst.Tuple, cst.List):
            elements = [e for e in target.elements]
            tuples = [v for v in vals if isinstance(v, TupleVal) and len(v.items) == len(elements)]
            rest = frozenset(v for v in vals if not isinstance(v, TupleVal))
            spread = rest | frozenset(x for v in vals if isinstance(v, TupleVal) for item in v.items for x in item)
            for i, element in enumerate(elements):
                if type(element) is cst.StarredElement:
                    self.bind(element.value, spread, state)
                    continue
                item_vals = rest | frozenset(x for t in tuples for x in t.items[i]) if tuples else spread
                self.bind(element.value, item_vals, state)
            return
        if type(target) is cst.StarredElement:
            self.bind(target.value, vals, state)
            return
        if type(target) is cst.Subscript:
            base_vals = self.eval(target.value, state)
            lists = [v for v in base_vals if isinstance(v, ListRef)]
            for lst in lists:
                state.env[lst.key] = state.env.get(lst.key, EMPTY) | vals
            tensors = self.graph_values(base_vals, state)
            key = self.target_key(target)
            if tensors and not lists and key is not None and type(target.value) in (cst.Name, cst.Attribute):
                node = self.a.node(self, state, target, "index_put", tensors + self.graph_values(vals, state), Saves.UNKNOWN)
                self.bind(target.value, frozenset((node,)), state)
            elif key is not None and not lists:
                state.env[key] = state.env.get(key, EMPTY) | vals
            return
        key = self.target_key(target)
        if key is None:
            self.eval(target, state)
            return
        for value in vals:
            if isinstance(value, AbstractNode) and value.name is None and value is not OPAQUE:
                value.name = key
        state.env[key] = vals

    def _set_requires_grad(self, target: cst.Attribute, flag: Optional[bool], state: State) -> None:
        """`x.requires_grad = True` makes `x` a tracked leaf, `= False` an
        untracked one; a runtime flag leaves it unknown."""
        base_key = self.target_key(target.value)
        if base_key is None:
            return
        tracked = Tracked.UNKNOWN if flag is None else Tracked.YES if flag else Tracked.NO
        leaf = self.a.node(self, state, target, "requires_grad", (), Saves.NOTHING, tracked, leaf=True)
        state.env[base_key] = frozenset((leaf,))

    def bind_parameters(self, fn: cst.FunctionDef, state: State, method: bool, args: Optional[list]) -> None:
        params = list(fn.params.posonly_params) + list(fn.params.params)
        start = 0
        if method and params and not _is_static(fn):
            state.env[params[0].name.value] = frozenset((SELF,)) if not _is_classmethod(fn) else EMPTY
            start = 1
        positional = [a for a in (args or []) if a[0] is None]
        keywords = {a[0]: a[1] for a in (args or []) if a[0] is not None}
        for i, param in enumerate(params[start:]):
            name = param.name.value
            if name in keywords:
                state.env[name] = keywords[name]
            elif i < len(positional):
                state.env[name] = positional[i][1]
            else:
                state.env[name] = frozenset((OPAQUE,))
        for param in fn.params.kwonly_params:
            name = param.name.value
            state.env[name] = keywords.get(name, frozenset((OPAQUE,)))
        for star in (fn.params.star_arg, fn.params.star_kwarg):
            if type(star) is cst.Param:
                state.env[star.name.value] = frozenset((OPAQUE,))

    # ---------------------------------------------------------- expressions

    def lookup(self, key: str, state: State) -> Vals:
        if key in state.env:
            return state.env[key]
        for env in self.fallback:
            if key in env:
                return env[key]
        if self.owner is not None and key in self.owner.state:
            return self.owner.state[key]
        return frozenset((OPAQUE,))

    def is_bound(self, key: Optional[str], state: State) -> bool:
        """Is this attribute path (`self.head`) bound to a known value?"""
        if key is None:
            return False
        if key in state.env or any(key in env for env in self.fallback):
            return True
        return self.owner is not None and key in self.owner.state

    def canonical(self, expr: cst.BaseExpression, name: Optional[str] = None) -> Optional[str]:
        """The imported dotted name an expression refers to (`F.relu` ->
        `torch.nn.functional.relu`), unless a local binding shadows it;
        `name`, the expression's dotted name when the caller has it."""
        name = name or dotted_name(expr)
        if name is None:
            return None
        head = name.split(".")[0]
        if head in self.a.imports.aliases:
            return self.a.imports.resolve(name)
        return None

    def eval(self, expr: cst.BaseExpression, state: State) -> Vals:
        method = _EVAL.get(type(expr))
        if method is None:
            return self._eval_children(expr, state)
        return method(self, expr, state)

    def _eval_children(self, expr: cst.CSTNode, state: State) -> Vals:
        """Expressions that hold no graph themselves but may contain calls
        (an f-string that prints `loss.item()`): evaluate the parts."""
        if type(expr) is cst.FormattedString:
            for part in expr.parts:
                if type(part) is cst.FormattedStringExpression:
                    self.eval(part.expression, state)
        elif type(expr) is cst.ConcatenatedString:
            self.eval(expr.left, state)
            self.eval(expr.right, state)
        elif type(expr) is cst.Slice:
            for part in (expr.lower, expr.upper, expr.step):
                if part is not None:
                    self.eval(part, state)
        elif type(expr) in (cst.Yield, cst.StarredElement) and isinstance(expr.value, cst.BaseExpression):
            self.eval(expr.value, state)
        return EMPTY

    def eval_name(self, expr: cst.Name, state: State) -> Vals:
        name = expr.value
        if name in ("True", "False", "None"):
            return EMPTY
        if name in state.env:
            return state.env[name]
        for env in self.fallback:
            if name in env:
                return env[name]
        if name in self.a.functions:
            fn = self.a.functions[name]
            ref = self.a.function_refs.get((fn, (), ()))
            if ref is None:
                ref = self.a.function_refs[(fn, (), ())] = FunctionRef(fn)
            return frozenset((ref,))
        if name in self.a.classes:
            info = self.a.classes[name]
            return frozenset((ClassRef(info.node, info.is_module, info.parametric),))
        if name in self.a.imports.aliases or name in _BUILTIN_NAMES:
            return EMPTY
        return frozenset((OPAQUE,))

    def eval_attribute(self, expr: cst.Attribute, state: State) -> Vals:
        key = dotted_name(expr)
        if key is not None:
            head = key.split(".")[0]
            if head in self.a.imports.aliases and head not in state.env:
                return EMPTY  # torch.float32, np.pi: module attributes, not tensors
            if key in state.env:
                return state.env[key]
            if self.owner is not None and key in self.owner.state:
                return self.owner.state[key]
            for env in self.fallback:
                if key in env:
                    return env[key]
        base = self.eval(expr.value, state)
        attr = expr.attr.value
        out: set = set()
        for value in base:
            if isinstance(value, (AbstractNode, Carried)):
                if value is OPAQUE:
                    out.add(OPAQUE)
                elif attr in ops.UNTRACKING_ATTRIBUTES:
                    continue
                elif attr in ("T", "mT", "H", "mH"):
                    out.add(self.a.node(self, state, expr, "t", [value], Saves.NOTHING))
                else:
                    out.add(value)  # `.values`, `.logits`, `.loss`: the same graph
            elif isinstance(value, ModuleRef):
                info = self._user_class(value)
                if info is not None and f"self.{attr}" in info.state:
                    out |= info.state[f"self.{attr}"]
                else:
                    out.add(ModuleRef("submodule", value.parametric, Saves.UNKNOWN, frozen=value.frozen))
            elif isinstance(value, SelfRef):
                out.add(OPAQUE)
            elif isinstance(value, (ListRef, TupleVal, FunctionRef, ClassRef)):
                continue
            else:
                out.add(OPAQUE)
        return frozenset(out)

    def eval_binary(self, expr: cst.BinaryOperation, state: State) -> Vals:
        left = self.eval(expr.left, state)
        right = self.eval(expr.right, state)
        symbol = _BINARY_SYMBOLS.get(type(expr.operator))
        lists = [v for v in left | right if isinstance(v, ListRef)]
        if lists and symbol == "+":
            return frozenset(lists)
        parents = self.graph_values(left, state) + self.graph_values(right, state)
        if not parents:
            return EMPTY
        if symbol is None:  # bitwise operators: masks, never graph
            return EMPTY
        return frozenset((self.a.node(self, state, expr, symbol, parents, ops.operator_saves(symbol)),))

    def eval_unary(self, expr: cst.UnaryOperation, state: State) -> Vals:
        vals = self.eval(expr.expression, state)
        if type(expr.operator) in (cst.Not, cst.BitInvert):
            return EMPTY
        parents = self.graph_values(vals, state)
        if not parents or type(expr.operator) is cst.Plus:
            return vals
        return frozenset((self.a.node(self, state, expr, "neg", parents, Saves.NOTHING),))

    def eval_compare(self, expr: cst.Comparison, state: State) -> Vals:
        self.eval(expr.left, state)
        for target in expr.comparisons:
            self.eval(target.comparator, state)
        return EMPTY

    def eval_boolean(self, expr: cst.BooleanOperation, state: State) -> Vals:
        return self.eval(expr.left, state) | self.eval(expr.right, state)

    def eval_ifexp(self, expr: cst.IfExp, state: State) -> Vals:
        self.eval(expr.test, state)
        return self.eval(expr.body, state) | self.eval(expr.orelse, state)

    def eval_subscript(self, expr: cst.Subscript, state: State) -> Vals:
        base = self.eval(expr.value, state)
        index_vals: Vals = EMPTY
        literal_index: Optional[int] = None
        basic = True
        for element in expr.slice:
            if type(element.slice) is cst.Index:
                index_expr = element.slice.value
                vals = self.eval(index_expr, state)
                index_vals |= vals
                if type(index_expr) is cst.Integer:
                    literal_index = int(index_expr.value, 0)
                elif type(index_expr) in (cst.List, cst.Tuple) or self.graph_values(vals, state):
                    basic = False
            elif type(element.slice) is cst.Slice:
                self._eval_children(element.slice, state)
        out: set = set()
        tensors = []
        for value in base:
            if isinstance(value, ListRef):
                out |= state.env.get(value.key, EMPTY)
            elif isinstance(value, TupleVal):
                if literal_index is not None and -len(value.items) <= literal_index < len(value.items):
                    out |= value.items[literal_index]
                else:
                    out |= frozenset(x for item in value.items for x in item)
            elif isinstance(value, (AbstractNode, Carried)):
                if value is OPAQUE:
                    out.add(OPAQUE)
                else:
                    tensors.append(value)
            elif isinstance(value, ModuleRef):
                out.add(value)
            else:
                out.add(OPAQUE)
        if tensors:
            saves = Saves.NOTHING if basic else Saves.TENSORS
            out.add(self.a.node(self, state, expr, "index", tensors, saves))
        return frozenset(out)

    def eval_sequence(self, expr: cst.CSTNode, state: State) -> Vals:
        items = []
        for element in expr.elements:
            vals = self.eval(element.value, state)
            if type(element) is cst.StarredElement:
                vals = self.elements(vals, state)
            items.append(vals)
        if type(expr) is cst.Tuple:
            return frozenset((tuple_of(items),))
        return frozenset((self._new_list(expr, frozenset(x for item in items for x in item), state),))

    def eval_dict(self, expr: cst.Dict, state: State) -> Vals:
        values: set = set()
        for element in expr.elements:
            if type(element) is cst.DictElement:
                self.eval(element.key, state)
                values |= self.eval(element.value, state)
            else:
                values |= self.elements(self.eval(element.value, state), state)
        return frozenset((self._new_list(expr, frozenset(values), state),))

    def _new_list(self, site: cst.CSTNode, elements: Vals, state: State) -> ListRef:
        key = (site, self.context, self.loops)
        lst = self.a.lists.get(key)
        if lst is None:
            lst = self.a.lists[key] = ListRef(site, self.loops)
        state.env[lst.key] = elements
        return lst

    def eval_comprehension(self, expr: cst.CSTNode, state: State) -> Vals:
        inner = state.copy()
        comp = expr.for_in
        while comp is not None:
            self.bind(comp.target, self.elements(self.eval(comp.iter, inner), inner), inner)
            for condition in comp.ifs:
                self.eval(condition.test, inner)
            comp = comp.inner_for_in
        if type(expr) is cst.DictComp:
            self.eval(expr.key, inner)
            produced = self.eval(expr.value, inner)
        else:
            produced = self.eval(expr.elt, inner)
        state.released.update(inner.released)
        return frozenset((self._new_list(expr, produced, state),))

    def eval_named(self, expr: cst.NamedExpr, state: State) -> Vals:
        vals = self.eval(expr.value, state)
        self.bind(expr.target, vals, state)
        return vals

    def eval_lambda(self, expr: cst.Lambda, state: State) -> Vals:
        return EMPTY

    def eval_literal(self, expr: cst.CSTNode, state: State) -> Vals:
        return EMPTY

    def eval_await(self, expr: cst.Await, state: State) -> Vals:
        return self.eval(expr.expression, state)

    # -------------------------------------------------------------- values

    def graph_values(self, vals: Iterable[Value], state: State) -> list:
        """The graph nodes a value contributes as an operand: tensors, the
        parameters of a module, the elements of tuples and lists."""
        out: list = []
        for value in vals:
            if isinstance(value, (AbstractNode, Carried)):
                out.append(value)
            elif isinstance(value, TupleVal):
                for item in value.items:
                    out.extend(self.graph_values(item, state))
            elif isinstance(value, ListRef):
                out.extend(v for v in state.env.get(value.key, EMPTY) if isinstance(v, (AbstractNode, Carried)))
            elif isinstance(value, ModuleRef):
                out.append(self._parameter_leaf(value))
        return out

    def elements(self, vals: Vals, state: State) -> Vals:
        """What iterating over a value yields."""
        out: set = set()
        for value in vals:
            if isinstance(value, ListRef):
                out |= state.env.get(value.key, EMPTY)
            elif isinstance(value, TupleVal):
                for item in value.items:
                    out |= item
            elif isinstance(value, (AbstractNode, Carried, ModuleRef)):
                out.add(value)
        return frozenset(out)

    def _parameter_leaf(self, module: ModuleRef) -> AbstractNode:
        tracked = Tracked.YES if module.parametric and not module.frozen else Tracked.NO
        key = ("<parameters>", module.class_name, tracked)
        node = self.a.nodes.get(key)
        if node is None:
            node = AbstractNode(self.a.module, (), tracked, True, Saves.NOTHING, "parameter")
            self.a.nodes[key] = node
        return node

    # --------------------------------------------------------------- calls

    def eval_call(self, call: cst.Call, state: State) -> Vals:
        args: list[tuple[Optional[str], Vals]] = []
        for arg in call.args:
            vals = self.eval(arg.value, state)
            if arg.star == "*":
                vals = self.elements(vals, state)
            args.append((arg.keyword.value if arg.keyword is not None else None, vals))
        func = call.func
        raw = dotted_name(func)
        if raw is not None and self._matches(raw, self.a.backward_names):
            roots = args[0][1] if args else EMPTY
            self.backward(call, roots, state, f"{raw}(...)", positional_offset=None)
            return EMPTY
        if raw is not None and self._matches(raw, self.a.tracked_names):
            parents = [p for _, v in args for p in self.graph_values(v, state)]
            return frozenset((self.a.node(self, state, call, f"{raw}(...)", parents, Saves.UNKNOWN, Tracked.YES),))
        name = self.canonical(func, raw)
        if name is not None and (name == "torch" or name.startswith("torch.")):
            result = self.torch_call(call, name, args, state)
        elif type(func) is cst.Attribute and self.is_bound(raw, state):
            result = self.call_values(call, func, self.lookup(raw, state), args, state)
        elif type(func) is cst.Attribute:
            receiver = self.eval(func.value, state)
            result = self.method_call(call, func, receiver, args, state)
        else:
            callee = self.eval(func, state)
            result = self.call_values(call, func, callee, args, state)
        self._call_function_arguments(args, state)
        return result

    def _matches(self, raw: str, names: frozenset[str]) -> bool:
        return bool(names) and any(raw == n or raw.endswith("." + n) for n in names)

    def _call_function_arguments(self, args: list, state: State) -> None:
        """A function passed as an argument (an optimizer closure) is called."""
        for _, vals in args:
            for value in vals:
                if isinstance(value, FunctionRef) and not value.node.params.params:
                    self.inline(value.node, value.node, [], state, owner=None, closure=value.closure)

    def torch_call(self, call: cst.Call, name: str, args: list, state: State) -> Vals:
        last = name.rsplit(".", 1)[-1]
        if name in ("torch.autograd.grad", "torch.autograd.backward"):
            roots = args[0][1] if args else EMPTY
            self.backward(call, roots, state, name + "(...)", positional_offset=3 if last == "grad" else 2,
                          is_grad=last == "grad")
            return frozenset((OPAQUE,)) if last == "grad" else EMPTY
        if name in _SET_GRAD and args:
            flag = _literal_bool(call.args[0].value)
            if flag is not None:
                state.no_grad = not flag
            return EMPTY
        if name in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            flag = _literal_bool(_keyword_value(call, "requires_grad"))
            tracked = Tracked.NO if flag is False else Tracked.YES
            return frozenset((self.a.node(self, state, call, "Parameter", (), Saves.NOTHING, tracked, leaf=True),))
        if name.startswith("torch.nn.") and last[:1].isupper() and not name.startswith("torch.nn.functional"):
            saves = ops.module_saves(last, call_arguments(call))
            return frozenset((ModuleRef(last, last in ops.PARAMETRIC_MODULES, saves,
                                        recurrent=last in ops.RECURRENT_MODULES),))
        if last in _FACTORIES:
            requires = _keyword_value(call, "requires_grad")
            flag = _literal_bool(requires)
            tracked = Tracked.YES if flag else Tracked.NO if requires is None or flag is False else Tracked.UNKNOWN
            return frozenset((self.a.node(self, state, call, last, (), Saves.NOTHING, tracked, leaf=True),))
        if name.startswith(("torch.optim", "torch.utils", "torch.cuda", "torch.distributed", "torch.backends",
                            "torch.jit", "torch.onnx", "torch.hub")) or last in ops.UNTRACKING:
            return EMPTY
        parents = [p for _, v in args for p in self.graph_values(v, state)]
        if not parents:
            return EMPTY
        return frozenset((self.a.node(self, state, call, last, parents, ops.function_saves(last)),))

    def method_call(self, call: cst.Call, func: cst.Attribute, receiver: Vals, args: list, state: State) -> Vals:
        method = func.attr.value
        tensors = [v for v in receiver if isinstance(v, (AbstractNode, Carried))]
        known_tensors = [v for v in tensors if v is not OPAQUE]
        if method == "backward":
            owner_name = (dotted_name(func.value) or "").split(".")[-1]
            if args and args[0][0] is None and not known_tensors and owner_name in _BACKWARD_RUNNERS:
                self.backward(call, args[0][1], state, f"{owner_name}.backward(...)", positional_offset=None)
            else:
                self.backward(call, frozenset(tensors), state, "backward()", positional_offset=1)
            return EMPTY
        if method == "manual_backward" and args:
            self.backward(call, args[0][1], state, "manual_backward(...)", positional_offset=None)
            return EMPTY
        if method in _BARRIER_METHODS and not known_tensors:
            state.retained.clear()
        out: set = set()
        for value in receiver:
            if isinstance(value, SelfRef) and self.owner is not None and method in self.owner.methods:
                out |= self.inline(call, self.owner.methods[method], args, state, owner=self.owner)
            elif isinstance(value, ModuleRef):
                out |= self.module_method(call, func, value, method, args, state)
            elif isinstance(value, ListRef):
                out |= self.list_method(call, func, value, method, args, state)
            elif isinstance(value, ClassRef):
                out.add(OPAQUE)
        if known_tensors:
            out |= self.tensor_method(call, func, known_tensors, method, args, state)
        elif OPAQUE in receiver:
            if method == "scale" and args:
                out |= args[0][1]  # GradScaler.scale(loss): the same graph
            elif method not in _BARRIER_METHODS:
                out |= self.unknown_call(call, args, state, receiver_unknown=True)
        return frozenset(out)

    def tensor_method(self, call: cst.Call, func: cst.Attribute, tensors: list, method: str, args: list,
                      state: State) -> Vals:
        if method in ops.UNTRACKING:
            return EMPTY
        if method == "requires_grad_":
            flag = _literal_bool(call.args[0].value) if call.args else True
            if flag is False:
                return EMPTY
            tracked = Tracked.YES if flag else Tracked.UNKNOWN
            leaf = self.a.node(self, state, call, "requires_grad_", (), Saves.NOTHING, tracked, leaf=True)
            key = self.target_key(func.value)
            if key is not None:
                state.env[key] = frozenset((leaf,))
            return frozenset((leaf,))
        if method in _TENSOR_SELF_METHODS:
            return frozenset(tensors)
        parents = list(tensors) + [p for _, v in args for p in self.graph_values(v, state)]
        node = self.a.node(self, state, call, method, parents, ops.function_saves(method))
        if method.endswith("_") and not method.endswith("__"):
            key = self.target_key(func.value)
            if key is not None:
                state.env[key] = frozenset((node,))
        return frozenset((node,))

    def module_method(self, call: cst.Call, func: cst.Attribute, module: ModuleRef, method: str, args: list,
                      state: State) -> Vals:
        if method in _MODULE_IDENTITY_METHODS:
            return frozenset((module,))
        if method == "requires_grad_":
            flag = _literal_bool(call.args[0].value) if call.args else True
            frozen = replace(module, frozen=flag is False)
            key = self.target_key(func.value)
            if key is not None:
                state.env[key] = frozenset((frozen,))
            return frozenset((frozen,))
        if method in _PARAMETER_METHODS:
            return frozenset((self._parameter_leaf(module),))
        if method == "forward":
            return self.module_call(call, func.value, module, args, state)
        info = self._user_class(module)
        if info is not None:
            if method in info.methods:
                return self.inline(call, info.methods[method], args, state, owner=info, share_self=False)
            if f"self.{method}" in info.state:  # a submodule: `model.body(x)`
                return self.call_values(call, func, info.state[f"self.{method}"], args, state)
        return EMPTY

    def _user_class(self, module: ModuleRef) -> Optional[ClassInfo]:
        if module.user_class is None:
            return None
        info = self.a.classes.get(module.user_class.name.value)
        return info if info is not None and info.node is module.user_class else None

    def list_method(self, call: cst.Call, func: cst.Attribute, lst: ListRef, method: str, args: list,
                    state: State) -> Vals:
        if method in _LIST_ADDERS:
            added: Vals = EMPTY
            for _, vals in args:
                added |= self.elements(vals, state) if method in ("extend", "update") else vals
            state.env[lst.key] = state.env.get(lst.key, EMPTY) | added
            stmt_target = func.value
            self.a.note_accumulation(self, call, stmt_target, [lst], added, None, state)
            return EMPTY
        if method in _LIST_GETTERS:
            return state.env.get(lst.key, EMPTY) if method != "copy" else frozenset((lst,))
        return EMPTY

    def call_values(self, call: cst.Call, func: cst.BaseExpression, callee: Vals, args: list,
                    state: State) -> Vals:
        out: set = set()
        if type(func) is cst.Name and func.value in _BUILTIN_NAMES and func.value not in state.env:
            return self.builtin_call(call, func.value, args, state)
        for value in callee:
            if isinstance(value, FunctionRef):
                out |= self.inline(call, value.node, args, state, owner=None, closure=value.closure)
            elif isinstance(value, ClassRef):
                if value.is_module:
                    saves = Saves.TENSORS if value.parametric else Saves.UNKNOWN
                    out.add(ModuleRef(value.node.name.value, value.parametric, saves, user_class=value.node))
            elif isinstance(value, ModuleRef):
                out |= self.module_call(call, func, value, args, state)
            elif value is OPAQUE:
                out |= self.unknown_call(call, args, state, receiver_unknown=True)
            elif isinstance(value, (AbstractNode, Carried)):
                out |= self.unknown_call(call, args, state, receiver_unknown=True)
        return frozenset(out)

    def builtin_call(self, call: cst.Call, name: str, args: list, state: State) -> Vals:
        if name == "sum" and args:
            parents = self.graph_values(self.elements(args[0][1], state), state)
            if not parents:
                return EMPTY
            return frozenset((self.a.node(self, state, call, "sum", parents, Saves.NOTHING),))
        if name in ("max", "min", "abs", "pow") and args:
            parents = [p for _, v in args for p in self.graph_values(v, state)]
            if parents:
                return frozenset((self.a.node(self, state, call, name, parents, Saves.TENSORS),))
            return EMPTY
        if name in ("zip", "enumerate") and args:
            # iterating yields tuples: keep each position apart for unpacking targets
            columns = [self.elements(vals, state) for _, vals in args if _ is None]
            if name == "enumerate":
                columns = [EMPTY, columns[0]] if columns else [EMPTY]
            return frozenset((self._new_list(call, frozenset((tuple_of(columns),)), state),))
        if name in _PASS_THROUGH_BUILTINS:
            out: set = set()
            for _, vals in args:
                lists = [v for v in vals if isinstance(v, ListRef)]
                if lists and name in ("list", "sorted", "reversed"):
                    out |= frozenset((self._new_list(call, self.elements(vals, state), state),))
                else:
                    out |= vals
            return frozenset(out)
        if name == "getattr":
            return frozenset((OPAQUE,))
        return EMPTY

    def module_call(self, call: cst.Call, func: cst.BaseExpression, module: ModuleRef, args: list,
                    state: State) -> Vals:
        info = self._user_class(module)
        if info is not None and "forward" in info.methods and not module.frozen:
            result = self.inline(call, info.methods["forward"], args, state, owner=info, share_self=False)
            if result:
                return result
        parents = [p for _, v in args for p in self.graph_values(v, state)]
        tracked = None
        if module.parametric and not module.frozen:
            tracked = Tracked.YES
            parents.append(self._parameter_leaf(module))
        label = f"{dotted_name(func) or module.class_name}(...)"
        node = self.a.node(self, state, call, label, parents, module.saves, tracked)
        return frozenset((node,))

    def unknown_call(self, call: cst.Call, args: list, state: State, receiver_unknown: bool) -> Vals:
        parents = [p for _, v in args for p in self.graph_values(v, state)]
        if receiver_unknown:
            parents.append(OPAQUE)
        if not parents:
            return EMPTY
        label = f"{dotted_name(call.func) or 'call'}(...)"
        return frozenset((self.a.node(self, state, call, label, parents, Saves.UNKNOWN),))

    def inline(self, call: cst.CSTNode, fn: cst.FunctionDef, args: list, state: State,
               owner: Optional[ClassInfo], closure: Optional[dict] = None, share_self: bool = True) -> Vals:
        """Interpret a call of a function of this module at its call site, so
        the nodes it creates and the backwards it runs sit in the caller's
        loops (a training step called once per iteration)."""
        if self.depth >= INLINE_DEPTH or self.a.inline_budget <= 0 or fn in self.context:
            # A function of this file we will not look into (recursion, depth): its
            # result may well be detached (`repackage_hidden`), so it is unknown.
            if not type(call) is cst.Call:
                return EMPTY
            parents = [p for _, v in args for p in self.graph_values(v, state)]
            return frozenset((self.a.node(self, state, call, f"{fn.name.value}(...)", parents, Saves.UNKNOWN,
                                          Tracked.UNKNOWN),))
        self.a.inline_budget -= 1
        self.a.interpreted.add(fn)
        if share_self and owner is not None:
            self.a.inlined_methods.add(fn)
        nested = type(self.scope) is cst.FunctionDef and _encloses(self.scope, fn)
        fallback = ((state.env,) if self.is_module or nested else ()) + self.fallback
        if closure is not None and closure is not state.env:
            fallback = (closure,) + fallback
        callee_owner = owner if owner is not None else (self.owner if nested else None)
        callee = Frame(self.a, scope=fn, loops=self.loops, context=self.context + (call, fn), owner=callee_owner,
                       fallback=fallback, depth=self.depth + 1)
        inner = State({}, state.released, state.retained, state.kept,
                      state.no_grad or _is_no_grad_function(fn, self.a))
        share_self = share_self and owner is not None
        inner.env.update({k: v for k, v in state.env.items()
                          if k.startswith("<list@") or (share_self and k.startswith("self."))})
        callee.bind_parameters(fn, inner, method=owner is not None, args=args)
        end = callee.exec_block(fn.body.body, inner)
        for key, vals in end.env.items():
            if key.startswith("<list@") or (share_self and key.startswith("self.")) or key in callee.globals:
                state.env[key] = vals
        state.released.update(end.released)
        state.retained.update(end.retained)
        state.kept.update(end.kept)
        result: set = set()
        for vals in callee.returns:
            result |= vals
        return frozenset(result)

    def backward(self, call: cst.Call, roots: Vals, state: State, api: str, positional_offset: Optional[int],
                 is_grad: bool = False) -> None:
        retain = _keyword_value(call, "retain_graph")
        create = _keyword_value(call, "create_graph")
        if positional_offset is not None:
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            if retain is None and len(positional) > positional_offset:
                retain = positional[positional_offset]
            if create is None and len(positional) > positional_offset + 1:
                create = positional[positional_offset + 1]
        creates = _literal_bool(create) is True
        if creates or _literal_bool(retain) is True:
            retains = Retains.YES
        elif (retain is not None and _literal_bool(retain) is None) or (create is not None and _literal_bool(create) is None):
            retains = Retains.UNKNOWN
        elif _keyword_value(call, "inputs") is not None:
            retains = Retains.UNKNOWN  # a partial walk frees only part of the graph
        else:
            retains = Retains.NO
        key = (call, self.context, self.loops)
        event = self.a.events.get(key)
        graph_roots = [v for v in self.graph_values(self.elements(roots, state) | roots, state) if v is not OPAQUE]
        if event is None:
            self.a.order += 1
            event = BackwardEvent(call, graph_roots, retains, self.loops, self.a.order, self.scope, api, is_grad,
                                  creates, self.context)
            self.a.events[key] = event
        else:
            for root in graph_roots:
                if not any(root is r for r in event.roots):
                    event.roots.append(root)
        self.a.on_backward(event, state)


def _definition_site(node: AbstractNode, event: BackwardEvent) -> Optional[cst.CSTNode]:
    """Where a carried value is re-created in the loop: a node made inside a
    function that the loop called (`model(x, h)` running `forward`) is
    reported at that call, where the user detaches what is carried."""
    depth = len(event.context)
    if node.context[:depth] == event.context and len(node.context) > depth:
        call = node.context[depth]
        if type(call) is cst.Call:
            return call
    return None


def _keyword_value(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    arg = _keyword(call, name)
    return arg.value if arg is not None else None


def _is_static(fn: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) == "staticmethod" for d in fn.decorators)


def _is_classmethod(fn: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) == "classmethod" for d in fn.decorators)


def _is_no_grad_function(fn: cst.FunctionDef, analysis: ModuleAnalysis) -> bool:
    for decorator in fn.decorators:
        expr = decorator.decorator
        func = expr.func if type(expr) is cst.Call else expr
        name = dotted_name(func)
        if name is not None and analysis.imports.resolve(name) in _NO_GRAD_CONTEXTS:
            return True
    return False


def _encloses(outer: cst.FunctionDef, inner: cst.FunctionDef) -> bool:
    return any(stmt is inner for stmt in outer.body.body)


def _has_loop(fn: cst.FunctionDef) -> bool:
    return any(type(stmt) in (cst.For, cst.While) for stmt in walk_statements(fn.body.body, False))


def _creates_parameters(node: cst.ClassDef, analysis: ModuleAnalysis) -> bool:
    """Does this module class own parameters: a parametric layer, a
    `Parameter` or a parametric module class of this file assigned in its
    body, or a parametric base class?"""
    parametric = set(ops.PARAMETRIC_MODULES) | {"Parameter"}
    parametric |= {name for name, info in analysis.classes.items() if info.parametric}
    for stmt in walk_statements(node.body.body):
        value = getattr(stmt, "value", None) if type(stmt) in (cst.Assign, cst.AnnAssign, cst.Expr) else None
        if type(value) is cst.Call:
            callee = dotted_name(value.func) or ""
            if callee.split(".")[-1] in parametric:
                return True
    return any(
        (info := analysis.classes.get(dotted_name(base.value) or "")) is not None and info.parametric
        for base in node.bases
    )


_BUILTIN_NAMES = frozenset(
    dir(__import__("builtins"))
)

_EVAL: dict[type, Callable[[Frame, cst.CSTNode, State], Vals]] = {
    cst.Name: Frame.eval_name,
    cst.Attribute: Frame.eval_attribute,
    cst.Call: Frame.eval_call,
    cst.BinaryOperation: Frame.eval_binary,
    cst.UnaryOperation: Frame.eval_unary,
    cst.Comparison: Frame.eval_compare,
    cst.BooleanOperation: Frame.eval_boolean,
    cst.IfExp: Frame.eval_ifexp,
    cst.Subscript: Frame.eval_subscript,
    cst.Tuple: Frame.eval_sequence,
    cst.List: Frame.eval_sequence,
    cst.Set: Frame.eval_sequence,
    cst.Dict: Frame.eval_dict,
    cst.ListComp: Frame.eval_comprehension,
    cst.SetComp: Frame.eval_comprehension,
    cst.GeneratorExp: Frame.eval_comprehension,
    cst.DictComp: Frame.eval_comprehension,
    cst.NamedExpr: Frame.eval_named,
    cst.Lambda: Frame.eval_lambda,
    cst.Integer: Frame.eval_literal,
    cst.Float: Frame.eval_literal,
    cst.Imaginary: Frame.eval_literal,
    cst.SimpleString: Frame.eval_literal,
    cst.Ellipsis: Frame.eval_literal,
    cst.Await: Frame.eval_await,
}
