"""One activation being interpreted: its scope, loops and call context, and
the one name resolution every lookup goes through.

The statement, expression and call semantics live in `statements`,
`expressions` and `calls` as functions of a frame; a frame reports what it
sees (work spent, loop sites, backward events, accumulations, inlined calls)
through the narrow `Recorder` protocol, never to the driver's internals.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Optional, Protocol

import libcst as cst

from tapelint.analysis import cst_nodes, mappings
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp.calls import SPREAD, inline
from tapelint.analysis.interp.expressions import EVAL, eval_children, library_value
from tapelint.analysis.interp.iteration import iterated
from tapelint.analysis.interp.statements import exec_stmt
from tapelint.analysis.model import (
    OPAQUE,
    SELF,
    AbstractNode,
    BackwardEvent,
    Carried,
    FunctionRef,
    GraphValue,
    ListRef,
    Loop,
    MethodRef,
    ModuleRef,
    ObjectRef,
    StepEvent,
    Tracked,
    TupleVal,
    Value,
)
from tapelint.analysis.program import ClassInfo, Program
from tapelint.analysis.shapes import SHAPED
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.store import NodeStore
from tapelint.analysis.syntax import literal_key, whole_slice
from tapelint.analysis.walks import walk
from tapelint.ops import Saves


class Recorder(Protocol):
    """What the interpreter reports to whoever drives it."""

    def spend(self) -> None:
        """One statement interpreted; raises once the module's budget is spent."""

    def loop_site(self, loop: Loop, block: Sequence[cst.CSTNode], index: int) -> None: ...

    def backward(self, event: BackwardEvent, roots: Sequence[GraphValue], state: State) -> None:
        """A backward walked `roots` (this pass's of `event.roots`) in `state` (which it releases)."""

    def step(self, event: StepEvent) -> None:
        """An optimizer step (or an update by hand) changed parameters in place."""

    def accumulation(self, loops: tuple[Loop, ...], context: tuple, statement: cst.CSTNode,
                     target: cst.BaseExpression, lists: Sequence[ListRef], added: Sequence,
                     node: Optional[AbstractNode], no_grad: bool) -> None: ...

    def enter_call(self, fn: cst.FunctionDef, site: tuple, shares_self: bool) -> bool:
        """May `fn` be interpreted at `site` (its call and the chain of calls it is
        made in: the inlining budget)? Records that it was."""

    def initialise(self, info: ClassInfo) -> None:
        """Fill `info.state` with what `__init__` leaves (a class of another module, met first here)."""


class Frame:
    """One activation: a scope, its loops, its call context."""

    def __init__(
        self,
        program: Program,
        store: NodeStore,
        recorder: Recorder,
        scope: cst.CSTNode,
        loops: tuple[Loop, ...],
        context: tuple,
        owner: Optional[ClassInfo],
        fallback: tuple[dict[str, Vals], ...],
        depth: int = 0,
    ) -> None:
        self.program = program
        self.store = store
        self.recorder = recorder
        self.scope = scope
        self.loops = loops
        self.own_loops_from = len(loops)  # `loops[own_loops_from:]` are this frame's own (run here)
        self.context = context
        self.owner = owner
        self.fallback = fallback  # enclosing environments: closure, caller, module
        # The environments of the calls this activation runs inside, innermost
        # first: not names it can read, but bindings that stay live while it
        # runs (what a step inside a helper makes stale).
        self.callers: tuple[dict[str, Vals], ...] = ()
        self.depth = depth
        self.returns: list[Vals] = []
        self.yields: list[Vals] = []  # what each `yield` produced: a generator's elements
        self.exits: list[State] = []  # the state at each `return`
        # Per loop being run in this frame: the states at its `continue`s and `break`s.
        self.loop_exits: list[tuple[list[State], list[State]]] = []
        self.globals: set[str] = set()
        self.obj: Optional[ObjectRef] = None  # the object whose method this is, run on it (`inline`)
        self.is_module = type(scope) is cst_nodes.Module

    def callee(self, fn: cst.FunctionDef, call: cst.CSTNode, owner: Optional[ClassInfo],
               fallback: tuple[dict[str, Vals], ...], state: State) -> Frame:
        """The frame of `fn` called at `call` from this frame (whose `state` it
        is): the caller's loops and context, and the program of the module that
        defines `fn`."""
        frame = Frame(self.program.home_of(fn), self.store, self.recorder, fn, self.loops,
                      self.context + (call, fn), owner, fallback, self.depth + 1)
        frame.callers = (state.env, *self.callers)
        return frame

    # ------------------------------------------------------------ running

    def exec_block(self, body: Sequence[cst.CSTNode], state: State) -> State:
        spend = self.recorder.spend
        for index, stmt in enumerate(body):
            if state.ended:
                break  # after `continue`, `break`, `return` or `raise`: unreachable
            spend()
            state = exec_stmt(self, stmt, state, body, index)
        return state

    def finish(self, state: State) -> State:
        """The state when the activation ends: where its body ends, joined
        with every `return`."""
        for exit_state in self.exits:
            state = State.join(state, exit_state)
        return state

    def eval(self, expr: cst.BaseExpression, state: State) -> Vals:
        method = EVAL.get(type(expr))
        if method is None:
            return eval_children(self, expr, state)
        vals = method(self, expr, state)
        if type(expr) in SHAPED:
            self.store.note_shape(expr, vals)
        return vals

    # ------------------------------------------------------------ names

    def resolve(self, key: str, state: State) -> Optional[Vals]:
        """What a name or attribute path (`x`, `self.h`, `cfg.lr`) is bound to
        here, or None when nothing binds it: this scope's state first, then
        the enclosing environments (closure, caller, module) innermost first,
        then the object `self` is (what `__init__` left on it)."""
        vals = state.env.get(key)
        if vals is not None:
            return vals
        for env in self.fallback:
            vals = env.get(key)
            if vals is not None:
                return vals
        if self.owner is not None:
            return self.owner.state.get(key)
        return None

    def lookup(self, key: str, state: State) -> Vals:
        """`resolve`, with an unbound key unknown."""
        vals = self.resolve(key, state)
        return vals if vals is not None else frozenset((OPAQUE,))

    def canonical(self, expr: cst.BaseExpression, name: Optional[str] = None) -> Optional[str]:
        """The imported dotted name an expression refers to (`F.relu` ->
        `torch.nn.functional.relu`); `name`, the expression's dotted name
        when the caller has it."""
        name = name or dotted_name(expr)
        if name is None:
            return None
        head = name.split(".")[0]
        if head in self.program.imports.aliases:
            return self.program.imports.resolve(name)
        return None

    def target_key(self, expr: cst.BaseExpression) -> Optional[str]:
        """The state key an expression names: `x`, `self.h`, `d[]` for any `d[k]`."""
        if type(expr) is cst_nodes.Name:
            return expr.value
        if type(expr) is cst_nodes.Attribute:
            return dotted_name(expr)
        if type(expr) is cst_nodes.Subscript:
            base = self.target_key(expr.value)
            return f"{base}[]" if base is not None else None
        return None

    def run_hooks(self, roots: Sequence[GraphValue], state: State) -> None:
        """Run the `register_hook` functions of the tensors a backward from
        `roots` reaches, each once, as the backward does (the gradient they
        are given unknown). A hook defined in a method writes its `self.*`
        on that method's object, also once the method has returned."""
        ran: list[FunctionRef | MethodRef] = []
        for (node, _), _children in walk(roots):
            for hook in node.hooks:
                if any(hook is done for done in ran):
                    continue
                ran.append(hook)
                if isinstance(hook, FunctionRef):
                    obj = hook.obj if hook.obj is not self.obj else None
                    inline(self, hook.node, hook.node, [(None, EMPTY)], state, owner=None, closure=hook.closure,
                           obj=obj)
                elif (info := self.program.class_info(hook.obj.cls)) is not None and hook.name in info.methods:
                    method = info.methods[hook.name]
                    inline(self, method, method, [(None, EMPTY)], state, owner=info, share_self=False, obj=hook.obj)

    # ------------------------------------------------------------ binding

    def bind(self, target: cst.BaseExpression, vals: Vals, state: State) -> None:
        if type(target) in (cst_nodes.Tuple, cst_nodes.List):
            elements = list(target.elements)  # type: ignore[attr-defined]
            tuples = [v for v in vals if isinstance(v, TupleVal) and len(v.items) == len(elements)]
            rest = frozenset(v for v in vals if not isinstance(v, TupleVal))
            if not tuples and len(elements) > 1:
                for value in rest:
                    if isinstance(value, AbstractNode) and value.tracked is Tracked.UNKNOWN and value is not OPAQUE:
                        value.unpacked = True
            spread = rest | frozenset(x for v in vals if isinstance(v, TupleVal) for item in v.items for x in item)
            for i, element in enumerate(elements):
                if type(element) is cst_nodes.StarredElement:
                    self.bind(element.value, spread, state)
                    continue
                item_vals = rest | frozenset(x for t in tuples for x in t.items[i]) if tuples else spread
                self.bind(element.value, item_vals, state)
            return
        if type(target) is cst_nodes.StarredElement:
            self.bind(target.value, vals, state)
            return
        if type(target) is cst_nodes.Subscript:
            self._bind_item(target, vals, state)
            return
        key = self.target_key(target)
        if key is None:
            self.eval(target, state)
            return
        if type(target) is cst_nodes.Attribute:
            self.bind_attribute(key[:-len(target.attr.value) - 1], target.attr.value, vals, state)
            return
        self._bind_key(key, vals, state)

    def bind_attribute(self, base_key: str, attr: str, vals: Vals, state: State) -> None:
        """`base.attr = vals` (`setattr(base, "attr", vals)` too): on an object,
        its attribute (one of several objects' may be it); else the name path."""
        keys = self._object_attribute_keys(base_key, attr, state)
        for key in keys:
            state.env[key] = vals if len(keys) == 1 else state.env.get(key, EMPTY) | vals
            if state.facts or state.guards:
                state.rebound(key)  # `agent.tune = False`: what a test on it saw no longer holds
        if not keys:
            self._bind_key(f"{base_key}.{attr}", vals, state)

    def _bind_key(self, key: str, vals: Vals, state: State) -> None:
        for value in vals:
            if isinstance(value, AbstractNode) and value.name is None and value is not OPAQUE:
                value.name = key
        state.env[key] = vals
        self.store.note_binding(key, vals)
        if state.facts or state.guards:
            state.rebound(key)

    def object_attribute_keys(self, target: cst.Attribute, state: State) -> list[str]:
        """The state keys of `buffer.slot` where `buffer` is an object of a
        project class (or an instance of a user module, `model.hidden`): the
        object's attribute, what its methods read as `self.slot`. Empty when
        the base holds no such object."""
        base_key = self.target_key(target.value)
        return self._object_attribute_keys(base_key, target.attr.value, state) if base_key is not None else []

    def _object_attribute_keys(self, base_key: str, attr: str, state: State) -> list[str]:
        base = self.resolve(base_key, state)
        objects = [v for v in base or () if isinstance(v, ObjectRef)]
        objects += [v.instance for v in base or () if isinstance(v, ModuleRef) and v.instance is not None]
        return [obj.prefix + attr for obj in objects]

    def _bind_item(self, target: cst.Subscript, vals: Vals, state: State) -> None:
        """`lst[i] = v` adds to the container; `t[i] = v` on a tensor makes it hold `v` too."""
        base_vals = self.eval(target.value, state)
        lists = [v for v in base_vals if isinstance(v, ListRef)]
        replaced = whole_slice(target)  # `lst[:] = new`: the old elements are gone
        for lst in lists:
            if lst.mapping and not replaced:  # `d["loss"] = v` replaces that key's value alone
                strong = len(lists) == 1
                mappings.store(state, lst, literal_key(target), vals, strong, self.store.slot_names(lst))
                continue
            elements = self.elements(vals, state) if replaced else vals
            state.env[lst.key] = elements if replaced else state.env.get(lst.key, EMPTY) | elements
        tensors = self.graph_values(base_vals, state)
        key = self.target_key(target)
        if tensors and not lists and key is not None and type(target.value) in (cst_nodes.Name, cst_nodes.Attribute):
            # PyTorch's CopySlices keeps both graphs: the tensor holds what it held
            # and what was written into it, like a container of the values put in.
            held = frozenset(v for v in base_vals if isinstance(v, (AbstractNode, Carried)))
            self.bind(target.value, held | frozenset(self.graph_values(vals, state)), state)
        elif key is not None and not lists:
            state.env[key] = state.env.get(key, EMPTY) | vals

    def set_requires_grad(self, target: cst.Attribute, flag: Optional[bool], state: State) -> None:
        """`x.requires_grad = True` makes `x` a tracked leaf, `= False` an
        untracked one; a runtime flag leaves it unknown."""
        base_key = self.target_key(target.value)
        if base_key is None:
            return
        tracked = Tracked.UNKNOWN if flag is None else Tracked.YES if flag else Tracked.NO
        leaf = self.store.node(self, state, target, "requires_grad", (), Saves.NOTHING, tracked, leaf=True)
        state.env[base_key] = frozenset((leaf,))

    def freeze(self, key: Optional[str], modules: Vals, state: State) -> Vals:
        """`m.requires_grad_(False)`, or every parameter of `m` switched off:
        `m` contributes no tracked leaf from here on — also where a container
        built before holds it (`encoders = [enc1, enc2]`, then
        `enc1.requires_grad_(False)`): freezing changes the module, not the name."""
        frozen = {v: replace(v, frozen=True) for v in modules if isinstance(v, ModuleRef) and not v.frozen}
        if not frozen:
            return modules
        for name, vals in list(state.env.items()):
            if name.startswith("<list@") and any(v in frozen for v in vals):
                state.env[name] = frozenset(frozen.get(v, v) for v in vals)
        result = frozenset(frozen.get(v, v) for v in modules)
        if key is not None:
            state.env[key] = result
        return result

    def bind_parameters(self, fn: cst.FunctionDef, state: State, method: bool, args: Optional[list]) -> None:
        params = list(fn.params.posonly_params) + list(fn.params.params)
        start = 0
        if method and params and not _decorated(fn, "staticmethod"):
            state.env[params[0].name.value] = EMPTY if _decorated(fn, "classmethod") else frozenset((SELF,))
            start = 1
        positional = [a for a in (args or []) if a[0] is None]
        keywords = {a[0]: a[1] for a in (args or []) if a[0] is not None}
        spread = keywords.pop(SPREAD, None)  # what a `**mapping` of unknown keys holds
        named = [p.name.value for p in params[start:] + list(fn.params.kwonly_params)]
        for i, param in enumerate(params[start:]):
            name = param.name.value
            if name in keywords:
                state.env[name] = keywords[name]
            elif i < len(positional):
                state.env[name] = positional[i][1]
            else:
                state.env[name] = self._default(param) | (spread or EMPTY)
        for param in fn.params.kwonly_params:
            name = param.name.value
            state.env[name] = keywords[name] if name in keywords else self._default(param) | (spread or EMPTY)
        if type(fn.params.star_arg) is cst_nodes.Param:
            state.env[fn.params.star_arg.name.value] = frozenset((OPAQUE,))
        star = fn.params.star_kwarg
        if type(star) is cst_nodes.Param:
            if args is None:
                state.env[star.name.value] = frozenset((OPAQUE,))
            else:  # `**kwargs`: a mapping of the keyword arguments no parameter took
                extra = {name: vals for name, vals in keywords.items() if name not in named}
                kwargs = self.new_list(star, spread or EMPTY, state, mapping=True, slots=extra)
                state.env[star.name.value] = frozenset((kwargs,))

    def _default(self, param: cst.Param) -> Vals:
        """An unpassed parameter: what its default names when that is a
        library's (`optimizer_class=optim.Adam`), else unknown."""
        known = library_value(self, param.default) if param.default is not None else EMPTY
        return known or frozenset((OPAQUE,))

    # ------------------------------------------------------------ values

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
                out.append(self.store.parameter_leaf(value))
        return out

    def elements(self, vals: Vals, state: State, values: bool = False) -> Vals:
        """What iterating over a value yields (a mapping's keys: nothing
        known), or with `values`, what it holds (a mapping's values)."""
        out: set = set()
        for value in vals:
            if isinstance(value, ListRef):
                if values or not value.mapping:
                    out |= state.env.get(value.key, EMPTY)
            elif isinstance(value, TupleVal):
                for item in value.items:
                    out |= item
            elif isinstance(value, (AbstractNode, Carried, ModuleRef)):
                out.add(value)
        return frozenset(out)

    def iterate(self, site: cst.CSTNode, vals: Vals, state: State) -> Vals:
        """`vals` as a `for` over `site` sees them: a project object iterated
        through its `__iter__`/`__next__`/`__getitem__` (`interp.iteration`)."""
        return iterated(self, site, vals, state)

    def new_list(self, site: cst.CSTNode, elements: Vals, state: State, mapping: bool = False,
                 slots: Optional[Mapping[str, Vals]] = None) -> ListRef:
        """The container created at `site` here, now holding `elements`; a
        mapping holds `slots` by literal key and `elements` under others."""
        lst = self.store.new_list(site, self, mapping)
        if mapping:
            mappings.create(state, lst, slots or {}, elements, self.store.slot_names(lst))
        else:
            state.env[lst.key] = elements
        return lst

    def user_class(self, module: ModuleRef) -> Optional[ClassInfo]:
        """The class of this module an `nn.Module` instance was made from."""
        if module.user_class is None:
            return None
        info = self.program.class_info(module.user_class)
        if info is not None and not info.initialised:
            self.recorder.initialise(info)
        return info



def _decorated(fn: cst.FunctionDef, name: str) -> bool:
    return any(dotted_name(d.decorator) == name for d in fn.decorators)
