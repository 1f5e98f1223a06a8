"""Scheduling one module's analysis: which scopes run, in which order, with
what they start from, under one work budget. Entry point: `analyze_module`.

Module code runs first (what instances of each class hold comes from their
`__init__`); then module functions callers first (a function already
interpreted at a call site, with real arguments, needs no second, less
informed pass with unknown parameters); then each class's methods. A
function or method that runs a backward and has no loop of its own is a
training step: it runs again as the body of an implicit loop, called once
per step. The driver is the interpreter's `Recorder`: it forwards backward
events to the hazard log and accumulations to TL003's records.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes, protocols, reads
from tapelint.analysis.accumulation import Accumulations
from tapelint.analysis.anchors import Located, relocate
from tapelint.analysis.findings import Hazard
from tapelint.analysis.fix_facts import with_roles, with_shapes
from tapelint.analysis.hazards import HazardLog, one_per_total
from tapelint.analysis.interp.frame import Frame
from tapelint.analysis.interp.statements import has_loop, run_loop
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    BackwardEvent,
    Carried,
    GraphValue,
    ListRef,
    Loop,
    StepEvent,
    Tracked,
)
from tapelint.analysis.names import ModuleNames
from tapelint.analysis.overrides import unchanged_inherited
from tapelint.analysis.program import ClassInfo, Program
from tapelint.analysis.project import ModuleCache
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.store import NodeStore
from tapelint.analysis.syntax import forget, walk_nodes
from tapelint.analysis.updates import StepLog
from tapelint.fixes.reach import remember
from tapelint.settings import Settings

# Statements interpreted per line of the module (loops and inlining
# re-run bodies); past it the remaining scopes are skipped, so a pathological
# file costs bounded time instead of hanging the run.
WORK_PER_LINE = 20
MIN_WORK = 20_000
# Distinct inlined calls (a call site in one chain of calls) per module, to bound
# the breadth of the analysis on huge files. A call that runs again at the same
# site and context (each pass of a loop's fixpoint, a loop nested in another) is
# not charged again: what bounds those re-runs is the statement budget.
INLINE_BUDGET = 300
# Inlined calls each training step or framework hook may still make when it runs
# as its implicit loop, after the module's budget went to the methods before it:
# the step is where the hazards are (a trainer's `compute_loss` near the end of a
# 3,000-line file). The statement budget still bounds the whole module.
STEP_INLINE_RESERVE = 60


def analyze_module(module: cst.Module, settings: Settings, lines: int = 0, path: str = "",
                   names: Optional[ModuleNames] = None, cache: Optional[ModuleCache] = None) -> list[Located]:
    """Every hazard of one module, placed in it (`anchors`); `lines`, its
    length, sizes the work budget; `path`, where it is, resolves its
    first-party imports (none without it); `names`, the module's index when
    the caller keeps one (its fixes read it too); `cache`, where the trees
    of the modules it imports come from (`project.CACHE` by default)."""
    names = names or ModuleNames(module)
    try:
        with reads.one_view():
            analysis = ModuleAnalysis(module, settings, lines, path, names, cache)
            analysis.run()
        hazards = with_roles(analysis.results(), analysis.steps)
        found = relocate(hazards, analysis.program, analysis.contexts(), names)
        found = with_shapes(found, analysis.store.shapes, analysis.store.bound_shapes, module)
        remember([item.hazard for item in found])  # what the detach fixes ask of the graph, before it goes
        analysis.store.release()
        analysis.program.release()
        return in_source_order(found, module)
    finally:
        forget()  # the syntax facts memoised while it ran


def in_source_order(found: list[Located], module: cst.Module) -> list[Located]:
    """The hazards ordered by where their values are created. The analysis
    meets them in the order of sets of abstract values (object identities),
    so two equivalent hazards (one loss from either of two lambdas) would
    otherwise come out in a different order, and be reported at a different
    definition, from one run to the next."""
    if len(found) < 2:
        return found
    order = {node: index for index, node in enumerate(walk_nodes(module))}
    return sorted(found, key=lambda item: order.get(item.hazard.definition, len(order)))


class OutOfBudget(Exception):
    """The module's interpretation budget is spent."""


class ModuleAnalysis:
    """One module's analysis: its program, node store, hazard log and accumulations."""

    def __init__(self, module: cst.Module, settings: Settings, lines: int = 0, path: str = "",
                 names: Optional[ModuleNames] = None, cache: Optional[ModuleCache] = None) -> None:
        self.program = Program.root(module, settings, path, cache) if path else Program.of(module, settings)
        self.store = NodeStore(module)
        self.log = HazardLog(self.store, names or ModuleNames(module))
        self.accumulations = Accumulations()
        self.steps = StepLog()
        self.module_env: dict[str, Vals] = {}
        self.work_left = max(MIN_WORK, WORK_PER_LINE * lines)
        self.inline_budget = INLINE_BUDGET
        self.interpreted: set[cst.FunctionDef] = set()  # bodies run at some call site
        self.inlined_methods: set[cst.FunctionDef] = set()  # methods run as helpers of another method
        self.charged: set[tuple] = set()  # the (call, context) activations the inline budget paid for

    @property
    def events(self) -> dict[tuple, BackwardEvent]:
        return self.store.events

    def is_tracked(self, node: AbstractNode) -> bool:
        return self.store.is_tracked(node)

    # ----------------------------------------------------------------- driver

    def run(self) -> None:
        program = self.program
        if program.imports.foreign_framework() is not None:
            return  # another framework's autograd: nothing here is PyTorch's
        try:
            for info in program.classes.values():  # what instances hold, for calls in module code
                self.initialise(info)
            top = self._frame(program.module, (), None, ())
            self.module_env = top.exec_block(program.module.body, State({}, {}, {})).env
            for fn in reversed(list(program.functions.values())):
                if fn not in self.interpreted:
                    self._analyze_function(fn, owner=None, initial={})
            for info in program.classes.values():
                self._analyze_class(info)
        except OutOfBudget:
            pass  # what was found so far stands; the rest of the module is not interpreted

    def results(self) -> list[Hazard]:
        """Every hazard found. A running total that TL003 reports is not
        reported again as the reused node of a later walk: one finding, one
        root cause."""
        accumulated = self.accumulations.found(self.store)
        found: list[Hazard] = list(self.log.found({id(node) for node in accumulated}))
        return found + one_per_total(accumulated.values())

    def contexts(self) -> list[tuple[cst.CSTNode, tuple]]:
        """Each node's site and each backward's call, with the chain of calls it ran
        under. Tracked nodes come first: a hazard's value is one, so a site also run
        under `no_grad` (an evaluation call before the loop) is placed at the call
        that made the tracked tensor."""
        ordered = sorted(self.store.nodes.items(), key=lambda item: item[1].tracked is not Tracked.YES)
        nodes = [(key[0], key[1]) for key, _ in ordered if type(key[1]) is tuple]
        return nodes + [(event.call, event.context) for event in self.events.values()]

    def _frame(self, scope: cst.CSTNode, context: tuple, owner: Optional[ClassInfo],
               fallback: tuple[dict[str, Vals], ...], kind: type[Frame] = Frame) -> Frame:
        program = self.program.home_of(scope)
        if program is not self.program:
            fallback = ()  # another module's function: not this module's names
        return kind(program, self.store, self, scope=scope, loops=(), context=context, owner=owner,
                     fallback=fallback)

    def _analyze_class(self, info: ClassInfo) -> None:
        init = info.methods.get("__init__")
        if init is not None:
            info.state = self._analyze_function(init, owner=info, initial={}, collect_self=True)
        steps: list[cst.FunctionDef] = []
        extra: dict[str, Vals] = {}
        hooks = protocols.step_hooks(self.program, info)
        unchanged = unchanged_inherited(self.program, info)
        for name, fn in info.methods.items():
            if name == "__init__" or fn in unchanged:
                continue  # (an inherited method this class cannot change: its own module's analysis)
            if runs_only_as_a_step(fn, hook=name in hooks, method=True):
                steps.append(fn)
                continue
            before = len(self.store.events)
            leaves = self._analyze_function(fn, owner=info, initial=info.state, collect_self=True)
            if len(self.store.events) > before or name in hooks:
                steps.append(fn)  # runs a backward (or the framework does): called once per step
                continue
            for key, vals in leaves.items():
                extra[key] = extra.get(key, EMPTY) | vals
        for key, vals in extra.items():
            # Another method may run before every step (`set_input`, `select_action`):
            # what it leaves on `self` is not known to be computed once, unlike `__init__`'s.
            unknown = frozenset(OPAQUE if isinstance(v, (AbstractNode, Carried)) else v for v in vals)
            info.state[key] = info.state.get(key, EMPTY) | unknown
        for fn in steps:
            hook = fn.name.value in hooks
            if fn in self.inlined_methods and not hook:
                continue  # a helper of another method (`backward_G()` of `optimize_parameters()`)
            self.inline_budget = max(self.inline_budget, STEP_INLINE_RESERVE)
            self._analyze_function(fn, owner=info, initial=info.state, implicit_loop=True, hook=hook)

    def _analyze_function(
        self,
        fn: cst.FunctionDef,
        owner: Optional[ClassInfo],
        initial: dict[str, Vals],
        collect_self: bool = False,
        implicit_loop: bool = False,
        hook: bool = False,
    ) -> dict[str, Vals]:
        """Analyse `fn` on its own, its parameters unknown. Returns its final
        `self.*` bindings when asked (what `__init__` leaves on the object).
        A module function that runs a backward and has no loop of its own is
        a step function: it is analysed again as the body of an implicit loop."""
        if owner is None and not implicit_loop and runs_only_as_a_step(fn, hook=False, method=False):
            return self._run_function(fn, owner, initial, False, True)
        before = len(self.store.events)
        leaves = self._run_function(fn, owner, initial, collect_self, implicit_loop, hook)
        if owner is None and not implicit_loop and len(self.store.events) > before and not has_loop(fn):
            self._run_function(fn, owner, initial, False, True)
        return leaves

    def _run_function(self, fn: cst.FunctionDef, owner: Optional[ClassInfo], initial: dict[str, Vals],
                      collect_self: bool, implicit_loop: bool, hook: bool = False) -> dict[str, Vals]:
        """`hook`: a framework calls `fn` once per step and backwards what it returns (`protocols`)."""
        frame = self._frame(fn, (fn,), owner, (self.module_env,), protocols.HookFrame if hook else Frame)
        state = State(dict(initial), {}, {}, no_grad=self.program.is_no_grad_function(fn))
        frame.bind_parameters(fn, state, method=owner is not None, args=None)
        if implicit_loop:
            loop = self.store.loop(fn, implicit=True, label=f"calls of {fn.name.value}()")

            def call_again(s: State) -> State:
                """Each call gets its arguments afresh (`backward(self, loss)` is given a new loss)."""
                frame.bind_parameters(fn, s, method=owner is not None, args=None)
                return s

            state = run_loop(frame, loop, call_again, fn.body.body, state)
        else:
            state = frame.finish(frame.exec_block(fn.body.body, state))
        if not collect_self:
            return {}
        return {k: v for k, v in state.env.items() if k.startswith("self.") or k.startswith("<list@")}

    # ------------------------------------------------------------- Recorder

    def spend(self) -> None:
        self.work_left -= 1
        if self.work_left < 0:
            raise OutOfBudget

    def loop_site(self, loop: Loop, block: Sequence[cst.CSTNode], index: int) -> None:
        self.accumulations.loop_site(loop, block, index)

    def backward(self, event: BackwardEvent, roots: Sequence[GraphValue], state: State) -> None:
        self.store.prove(event)
        self.log.on_backward(event, roots, state)
        self.steps.on_backward(event)

    def step(self, event: StepEvent) -> None:
        self.steps.on_step(event)

    def accumulation(self, loops: tuple[Loop, ...], context: tuple, statement: cst.CSTNode,
                     target: cst.BaseExpression, lists: Sequence[ListRef], added: Sequence,
                     node: Optional[AbstractNode], no_grad: bool) -> None:
        self.accumulations.note(loops, context, statement, target, lists, added, node, no_grad)

    def initialise(self, info: ClassInfo) -> None:
        if info.initialised:
            return
        info.initialised = True
        if "__init__" in info.methods:
            info.state = self._analyze_function(info.methods["__init__"], info, {}, collect_self=True)

    def enter_call(self, fn: cst.FunctionDef, site: tuple, shares_self: bool) -> bool:
        if site not in self.charged:
            if self.inline_budget <= 0:
                return False
            self.inline_budget -= 1
            self.charged.add(site)
        self.interpreted.add(fn)
        if shares_self:
            self.inlined_methods.add(fn)
        return True


def runs_only_as_a_step(fn: cst.FunctionDef, hook: bool, method: bool) -> bool:
    """Is `fn` known to be a training step before it runs: a framework hook
    (the framework backwards what it returns), or a module function without
    a loop of its own whose body calls `.backward()`? Such a function is run
    only as the body of its implicit loop, without the run on its own that
    would find it walks a graph: that run is the loop's first pass placed
    outside the loop (`tests/test_convergence.py`: every fixture lints the
    same with it). A step method that is not a hook still gets that run:
    another step may call it, and then it is that step's helper, not a step
    of its own."""
    if method:
        return hook
    return not has_loop(fn) and any(
        type(node) is cst_nodes.Call and type(node.func) is cst_nodes.Attribute and node.func.attr.value == "backward"
        for node in walk_nodes(fn.body))
