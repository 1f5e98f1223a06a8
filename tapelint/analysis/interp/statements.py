"""Statements and control flow: branches copy the state and join it, loops
iterate their body to a fixed point (what reaches the head again is
carried), `continue`/`break`/`return`/`raise` end their path (its state
goes to the loop's head, after the loop, to the caller, nowhere),
`with torch.no_grad()` switches tracking off, and assignments bind.
Dispatch is by exact node type."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, mappings, paths, staleness, torch_api
from tapelint.analysis import state as lattice
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp import grad_mode, iteration
from tapelint.analysis.model import (
    AbstractNode,
    Carried,
    ClassRef,
    ListRef,
    Loop,
    ModuleRef,
    ObjectRef,
    SelfRef,
    TupleVal,
    Value,
)
from tapelint.analysis.names import binding_counts, bound_in
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.submodules import submodules
from tapelint.analysis.syntax import (
    isinstance_test,
    literal_key,
    negation,
    per_analysis,
    self_assignments,
    walk_nodes,
    walk_statements,
    whole_slice,
)
from tapelint.analysis.torch_api import literal_bool
from tapelint.analysis.walks import without_dead_releases

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

MAX_PASSES = 4  # loop fixed-point iterations; the lattice is shallow

_AUG_SYMBOLS = {
    cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
    cst.MatrixMultiplyAssign: "@",
}


def exec_stmt(frame: Frame, stmt: cst.CSTNode, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    if type(stmt) is cst_nodes.SimpleStatementLine:
        for small in stmt.body:
            handler = _SMALL.get(type(small))
            if handler is not None:
                handler(frame, small, state)
                if state.ended:
                    break
        return state
    compound = _COMPOUND.get(type(stmt))
    if compound is None:
        return state
    return compound(frame, stmt, state, block, index)


# --------------------------------------------------------------- control flow


def _exec_if(frame: Frame, stmt: cst.If, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    frame.eval(stmt.test, state)
    then, other = state.copy(), state.copy()
    _refine_none_test(frame, stmt.test, then, other)
    _refine_tensor_test(frame, stmt.test, then, other)
    _refine_class_test(frame, stmt.test, then, other)
    _branch_facts(frame, stmt.test, state, then, other)
    flag = _constant_flag(frame, stmt.test, state)
    if flag is not None:  # `if model.automatic_optimization:`, set once to False: one branch
        then.ended = then.ended or not flag
        other.ended = other.ended or flag
    then = frame.exec_block(stmt.body.body, then)
    if stmt.orelse is None:
        pass
    elif type(stmt.orelse) is cst_nodes.If:
        other = _exec_if(frame, stmt.orelse, other, block, index)
    else:
        other = frame.exec_block(stmt.orelse.body.body, other)
    own = frame.loops[frame.own_loops_from:]
    # A side that ended is dropped by the join, unless both did (then it keeps `other`): not worth pruning.
    if not then.ended:
        then = without_dead_releases(then, own, frame.store)
    if not other.ended or then.ended:
        other = without_dead_releases(other, own, frame.store)
    return State.join(then, other)


def fact_keys(frame: Frame, state: State) -> Callable[[str], Optional[str]]:
    """The key a fact about a name or attribute chain is under: the chain
    itself, unless it names a container (appends change its truthiness)."""
    def key_of(name: str) -> Optional[str]:
        vals = frame.resolve(name, state)
        return None if vals is not None and any(isinstance(v, ListRef) for v in vals) else name

    return key_of


def _branch_facts(frame: Frame, test: cst.BaseExpression, state: State, then: State, other: State) -> None:
    """Each branch knows what its condition says (`paths`); a branch the
    path's facts rule out is not taken."""
    key_of = fact_keys(frame, state)
    known = paths.decide(test, state.facts, key_of)
    if known is False:
        then.ended = True
    else:
        then.assume(paths.assumed(test, True, key_of))
    if known is True:
        other.ended = True
    else:
        other.assume(paths.assumed(test, False, key_of))


def _constant_flag(frame: Frame, test: cst.BaseExpression, state: State) -> Optional[bool]:
    """The value of a test on an object's flag that its class sets once, in
    `__init__`, to a literal and never again (`self.automatic_optimization =
    False`): an attribute of an instance of that class (`model.flag`,
    `self.flag`), or `not` of one. None when not known."""
    expr, negated = negation(test)
    if type(expr) is not cst_nodes.Attribute or dotted_name(expr.value) is None:
        return None  # (only a name or attribute chain is evaluated again)
    classes = set()
    for value in frame.eval(expr.value, state):
        if isinstance(value, ModuleRef) and value.user_class is not None:
            classes.add(value.user_class)
        elif isinstance(value, ObjectRef):
            classes.add(value.cls)
        elif isinstance(value, SelfRef) and frame.owner is not None:
            classes.add(frame.owner.node)
        else:
            return None
    values = {_set_once(cls, expr.attr.value) for cls in classes}
    if len(values) != 1 or None in values:
        return None
    (value,) = values
    return (not value) if negated else value


def _set_once(cls: cst.ClassDef, attr: str) -> Optional[bool]:
    """The literal bool that `cls.__init__` gives `self.<attr>` when that is the
    class's only assignment to it (augmented, annotated or unpacked ones count too)."""
    found = [literal_bool(stmt.value) if type(stmt) is cst_nodes.Assign and method.name.value == "__init__" else None
             for method in cls.body.body if type(method) is cst_nodes.FunctionDef
             for name, stmt in self_assignments(method) if name == attr]
    return found[0] if len(found) == 1 else None


def _refine_none_test(frame: Frame, test: cst.BaseExpression, then: State, other: State) -> None:
    """`if h is None:` / `if h is not None:` — on the branch where the
    value is None it holds no graph (the first iteration of a carried
    hidden state)."""
    if not (type(test) is cst_nodes.Comparison and len(test.comparisons) == 1):
        return
    comparison = test.comparisons[0]
    if not (type(comparison.comparator) is cst_nodes.Name and comparison.comparator.value == "None"):
        return
    key = frame.target_key(test.left)
    if key is None:
        return
    keys = frame.object_attribute_keys(test.left, then) if type(test.left) is cst_nodes.Attribute else []
    if len(keys) == 1:
        key = keys[0]  # `model.hidden is None`: the instance's attribute
    elif keys:
        return  # one of several objects': which one is None is not known
    if type(comparison.operator) is cst_nodes.Is:
        then.env[key] = EMPTY
    elif type(comparison.operator) is cst_nodes.IsNot:
        other.env[key] = EMPTY


def _refine_tensor_test(frame: Frame, test: cst.BaseExpression, then: State, other: State) -> None:
    """`if isinstance(val, torch.Tensor):` — on the branch where the value
    is no tensor it holds no graph: `if isinstance(v, torch.Tensor): v =
    v.item()` leaves a number on both paths."""
    tested = tensor_test(frame, test)
    if tested is None:
        return
    expr, negated = tested
    key = frame.target_key(expr)
    if key is None:
        return
    not_a_tensor = then if negated else other
    held = frame.lookup(key, not_a_tensor)
    not_a_tensor.env[key] = frozenset(v for v in held if not isinstance(v, (AbstractNode, Carried)))


def _refine_class_test(frame: Frame, test: cst.BaseExpression, then: State, other: State) -> None:
    """`if isinstance(m, Leaky):` or `isinstance(m, (Leaky, Synaptic))` with
    project classes — each branch keeps the objects and modules that are (or
    are not) of one of them or a subclass; a branch left with none of the
    name's values does not run. A class that is not the project's (`nn.Conv2d`)
    decides nothing."""
    expr, negated = negation(test)
    tested = isinstance_test(expr)
    if tested is None:
        return
    key = frame.target_key(tested[0])
    classes: list[cst.ClassDef] = []
    for named in tested[1]:
        values = frame.eval(named, then)
        if not values or not all(isinstance(v, ClassRef) for v in values):
            return
        classes.extend(v.node for v in values)
    if key is None or not classes:
        return
    held = frame.lookup(key, then)
    verdicts = {value: _instance_of(frame, value, classes) for value in held}
    if not held or None in verdicts.values():
        return  # something that may or may not be one
    yes = frozenset(v for v, verdict in verdicts.items() if verdict)
    for branch, kept in ((then, yes), (other, held - yes)) if not negated else ((then, held - yes), (other, yes)):
        branch.env[key] = kept
        branch.ended = branch.ended or not kept


def _instance_of(frame: Frame, value: object, classes: list[cst.ClassDef]) -> Optional[bool]:
    """Is `value` an instance of one of the project's `classes` (None: not known)?"""
    if isinstance(value, ModuleRef):
        cls = value.user_class
        if cls is None:
            return False if value.site is not None else None  # a torch layer made here is none
    elif isinstance(value, ObjectRef):
        cls = value.cls
    else:
        return None
    seen: list[cst.ClassDef] = []
    stack = [cls]
    while stack:
        current = stack.pop()
        if any(current is c for c in classes):
            return True
        if any(current is s for s in seen):
            continue
        seen.append(current)
        stack.extend(info.node for info in frame.program.home_of(current).base_classes(current))
    return False


def tensor_test(frame: Frame, test: cst.BaseExpression) -> Optional[tuple[cst.BaseExpression, bool]]:
    """For a test whether a value is a tensor — `isinstance(v, torch.Tensor)`,
    `torch.is_tensor(v)`, or `not` of either — the tested expression, and
    whether the test is negated; else None."""
    expr, negated = negation(test)
    tested = isinstance_test(expr)
    if tested is not None:
        if not all(frame.canonical(name) in torch_api.TENSOR_CLASSES for name in tested[1]):
            return None  # `isinstance(v, (torch.Tensor, float))`: a float passes too
        return tested[0], negated
    if type(expr) is not cst_nodes.Call or not expr.args or expr.args[0].keyword is not None \
            or frame.canonical(expr.func) != "torch.is_tensor":
        return None
    return expr.args[0].value, negated


def _exec_for(frame: Frame, stmt: cst.For, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    unrolled = _each_submodule(frame, stmt, state)
    if unrolled is not None:
        return unrolled
    iterable = frame.iterate(stmt.iter, frame.eval(stmt.iter, state), state)
    elements = frame.elements(iterable, state)
    _freeze_parameters_loop(frame, stmt, state)
    loop = frame.store.loop(stmt, label="for")
    frame.recorder.loop_site(loop, block, index)

    def bind(s: State) -> State:
        frame.bind(stmt.target, elements, s)
        return s

    per_element = elements if any(isinstance(v, ListRef) for v in iterable) else EMPTY
    per_element |= iteration.indexed_elements(frame, stmt, state)
    entered = iterates_at_least_once(stmt.iter, frame)
    rebinds = bind if _names_only(stmt.target) else None
    state = run_loop(frame, loop, bind, stmt.body.body, state, per_element, entered=entered, rebinds=rebinds)
    if stmt.orelse is not None:
        state = frame.exec_block(stmt.orelse.body.body, state)
    return state


# A loop over a module's submodules runs at most this many bodies one after the other.
MAX_UNROLLED = 32


def _each_submodule(frame: Frame, stmt: cst.For, state: State) -> Optional[State]:
    """`for m in net.modules(): m.reset_mem()` over a module the analysis
    knows: the body runs once per submodule, in order, `m` bound to that
    one, so what it does to each module's state (a reset of a stateful
    neuron's membrane) is done to each — joined over the iterations as an
    ordinary loop would, every instance would keep its old state too. Only
    for a body that walks no graph and steps nothing; None otherwise."""
    it = stmt.iter
    if not (type(it) is cst_nodes.Call and not it.args and type(it.func) is cst_nodes.Attribute
            and it.func.attr.value in torch_api.SUBMODULE_METHODS and dotted_name(it.func.value) is not None
            and stmt.orelse is None and not _walks_or_steps(stmt.body)):
        return None
    receiver = frame.eval(it.func.value, state)  # a name or attribute path: no effect
    if len(receiver) != 1 or not isinstance(module := next(iter(receiver)), ModuleRef):
        return None
    held = submodules(frame, module)
    each = [module, *held] if it.func.attr.value == "modules" else held
    if len(each) > MAX_UNROLLED:
        return None
    left: list[State] = []
    for value in each:
        continues: list[State] = []
        breaks: list[State] = []
        frame.loop_exits.append((continues, breaks))
        try:
            frame.bind(stmt.target, frozenset((value,)), state)
            state = frame.exec_block(stmt.body.body, state)
        finally:
            frame.loop_exits.pop()
        for other in continues:
            state = State.join(state, other)
        left.extend(breaks)
    for other in left:
        state = State.join(state, other)
    return state


def _walks_or_steps(body: cst.CSTNode) -> bool:
    """Does `body` call anything named `backward`, `grad` or `step`?"""
    return any(type(node) is cst_nodes.Call and type(node.func) is cst_nodes.Attribute
               and node.func.attr.value in ("backward", "grad", "step", "manual_backward")
               for node in walk_nodes(body))


def _distinct_per_element(elements: Vals, entry: State, end: State, loops: tuple[Loop, ...]) -> None:
    """A loop over a container's elements (`for l in losses: l.backward()`)
    binds a different runtime tensor in each iteration: what one
    iteration's walk released of an element's own graph is not the next
    element's. Kept released: what was released before the loop, and what
    a name outside the container also holds (`h` shared by every element) —
    unless it is an element made once per iteration of a loop that has
    ended (`loops`: the ones running), or made with it in that iteration:
    such a name (`loss` after `for ...: loss = ...; losses.append(loss)`)
    holds the last of many tensors, one element."""
    tensors = list(_tensors(elements))
    apart = _made_per_ended_iteration(tensors, loops)
    # (this iteration's tensors, or an ended loop's element: what it appended in its earlier iterations)
    new = [key for key in end.released if key not in entry.released and (key[1] is None or id(key[0]) in apart)]
    if not new:
        return
    # An element that is an object (a collated batch) owns what its attributes hold.
    objects = tuple(v.prefix for v in elements if isinstance(v, ObjectRef))
    held = [v for name, vals in end.env.items() if objects and name.startswith(objects) for v in vals]
    own = _reachable(tensors + list(_tensors(held)), True)
    # (an earlier iteration's value of an outer loop is another tensor: not shared)
    shared = _reachable((v for name, vals in entry.env.items()
                         if (not name.startswith("<") or name.startswith("<obj@")) and not name.startswith(objects)
                         for v in vals if isinstance(v, AbstractNode)), False)
    for key in new:
        node_id = id(key[0])
        if node_id in own and (node_id not in shared or node_id in apart):
            del end.released[key]


def _made_per_ended_iteration(elements: list, loops: tuple[Loop, ...]) -> set[int]:
    """Ids of the elements made in a loop that has ended, and of what each
    was made from in the same iteration of it (non-carried parents made in
    that loop too): one runtime tensor per iteration of that loop, so one
    per element. What every element was made from (a buffer filled before,
    all slices reading it) is not among them."""
    out: set[int] = set()
    for element in elements:
        node = element.node if isinstance(element, Carried) else element
        ended = [loop for loop in node.loops if loop not in loops]
        if not ended:
            continue
        stack = [node]
        while stack:
            current = stack.pop()
            if id(current) in out or current.leaf or not all(loop in current.loops for loop in ended):
                continue
            out.add(id(current))
            stack.extend(p for p in current.parents if isinstance(p, AbstractNode))
    return out


def _tensors(vals: Iterable[Value]) -> Iterable[Value]:
    """The tensors among `vals`, inside tuples too (a batch `(x, y)` of a generator)."""
    for value in vals:
        if isinstance(value, TupleVal):
            for item in value.items:
                yield from _tensors(item)
        elif isinstance(value, (AbstractNode, Carried)):
            yield value


def _reachable(roots: Iterable[Value], through_carried: bool) -> set[int]:
    """Ids of the nodes a walk from `roots` may run (`through_carried`: into
    earlier iterations' nodes too)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        value = stack.pop()
        if isinstance(value, Carried) and not through_carried:
            continue
        node = value.node if isinstance(value, Carried) else value
        if id(node) in seen or not isinstance(node, AbstractNode):
            continue
        seen.add(id(node))
        stack.extend(node.parents)
    return seen


def _exec_while(frame: Frame, stmt: cst.While, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    loop = frame.store.loop(stmt, label="while")
    frame.recorder.loop_site(loop, block, index)

    def bind(s: State) -> State:
        frame.eval(stmt.test, s)
        return s

    state = run_loop(frame, loop, bind, stmt.body.body, state, entered=literal_bool(stmt.test) is True)
    if stmt.orelse is not None:
        state = frame.exec_block(stmt.orelse.body.body, state)
    return state


def _released_since(entry: State, state: State) -> list:
    """The keys `state` released that `entry` had not, of tensors made before
    the loop or in its last iteration (not an earlier iteration's: those are
    `without_dead_releases`' own candidates)."""
    return [key for key in state.released if key[1] is None and key not in entry.released]


def iterates_at_least_once(iterable: cst.BaseExpression, frame: Optional[Frame] = None) -> bool:
    """Does a `for` over `iterable` run its body at least once whatever the
    program's data: `range` of bounds that are integer literals, or (with
    `frame`) names of the module's integer constants (`N_CRITIC = 5`), that
    is not empty; a non-empty literal list or tuple?"""
    if isinstance(iterable, (cst.List, cst.Tuple)):
        return bool(iterable.elements) and not any(isinstance(e, cst.StarredElement) for e in iterable.elements)
    if type(iterable) is not cst_nodes.Call or dotted_name(iterable.func) != "range":
        return False
    bounds = [arg.value for arg in iterable.args]
    if len(bounds) not in (1, 2) or any(arg.keyword is not None or arg.star for arg in iterable.args):
        return False
    values = [_integer(b, frame) for b in bounds]
    if None in values:
        return False
    start, stop = (0, values[0]) if len(values) == 1 else values
    return start < stop  # type: ignore[operator]


def _integer(expr: cst.BaseExpression, frame: Optional[Frame]) -> Optional[int]:
    """The value of an integer literal, or of a name the module binds once,
    at its top level, to one, and that the loop's scope does not bind."""
    if type(expr) is cst_nodes.Integer:
        return int(expr.value, 0)
    if type(expr) is not cst_nodes.Name or frame is None:
        return None
    if not frame.is_module and expr.value in _locally_bound(frame.scope):
        return None
    return _module_integers(frame.program.module).get(expr.value)


@per_analysis
def _module_integers(module: cst.Module) -> dict[str, int]:
    """The names the module binds exactly once anywhere, at its top level, to an integer literal."""
    counts = binding_counts(module)
    if "*" in counts:
        return {}  # a star import may bind any of them
    found: dict[str, int] = {}
    for line in module.body:
        if type(line) is not cst_nodes.SimpleStatementLine:
            continue
        for small in line.body:
            if type(small) is not cst_nodes.Assign or len(small.targets) != 1:
                continue
            target, value = small.targets[0].target, small.value
            pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [(target, value)]
            if (type(target) is cst_nodes.Tuple and type(value) is cst_nodes.Tuple
                    and len(target.elements) == len(value.elements)
                    and not any(type(e) is cst_nodes.StarredElement for e in (*target.elements, *value.elements))):
                pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]  # `n_g, n_d = 2, 1`
            for bound, literal in pairs:
                if type(bound) is cst_nodes.Name and type(literal) is cst_nodes.Integer and counts[bound.value] == 1:
                    found[bound.value] = int(literal.value, 0)
    return found


@per_analysis
def _locally_bound(scope: cst.CSTNode) -> frozenset[str]:
    """The names a function binds itself: its parameters and targets."""
    if not isinstance(scope, cst.FunctionDef):
        return frozenset()
    params = scope.params
    named = [*params.posonly_params, *params.params, *params.kwonly_params]
    named += [star for star in (params.star_arg, params.star_kwarg) if isinstance(star, cst.Param)]
    return frozenset(bound_in(scope.body) | {param.name.value for param in named})


def _names_only(target: cst.BaseExpression) -> bool:
    """A `for` target of names (`x`, `i, (a, b)`): binding it evaluates nothing."""
    if type(target) in (cst_nodes.Tuple, cst_nodes.List):
        return all(_names_only(element.value) for element in target.elements)  # type: ignore[attr-defined]
    return type(target) is cst_nodes.Name


def run_loop(frame: Frame, loop: Loop, bind: Callable[[State], State], body: Sequence[cst.CSTNode],
             state: State, per_element: Vals = EMPTY, entered: bool = False,
             rebinds: Optional[Callable[[State], State]] = None) -> State:
    """Run the first iteration from the state before the loop, then iterate
    the body to a fixed point from what the end of an iteration carries back
    to the head: this iteration's nodes become `Carried` stand-ins, and so
    do the released regions, which are then "released by an earlier
    iteration". The first iteration is peeled (`NodeStore.first_iterations`,
    `AbstractNode.parents_when`): a value bound before the loop and rebound
    in it reaches only the first iteration's graph. `per_element`: the
    container elements a `for` binds, one runtime tensor per iteration;
    `entered`: the body runs at least once, so the state before the loop
    does not leave it. `rebinds`: `bind` when it only rebinds names, so two
    heads that are the same once it ran start the same pass (what it
    rebinds, the facts and guards about the last iteration's target among
    them, is forgotten first thing)."""
    outer = frame.loops
    frame.loops = outer + (loop,)
    own = frame.loops[frame.own_loops_from:]
    store = frame.store
    # (an earlier run's containers and releases that nothing reaches any more are not this run's)
    entry = without_dead_releases(lattice.without_garbage(state, loop, store.lists.values), (loop,), store).copy()
    head = entry
    carried_first: Optional[State] = None  # the head of the second iteration
    # The states leaving the loop (an iteration's end, its breaks): the first
    # iteration's, and the latest pass's of the later ones (which cover the earlier).
    first_exits: list[State] = []
    later_exits: list[State] = []
    frame.loop_exits.append(([], []))
    outer_first = store.first_iterations
    run = store.begin_run()
    try:
        for _ in range(MAX_PASSES):
            first = carried_first is None
            store.first_iterations = outer_first + (loop,) if first else outer_first
            before = store.changes
            store.begin_pass(run)
            continues: list[State] = []
            breaks: list[State] = []
            frame.loop_exits[-1] = (continues, breaks)
            returned = len(frame.exits)
            end = frame.exec_block(body, bind(head.copy()))
            if loop.implicit:  # a step function's `return` ends this call; the next call follows
                continues.extend(frame.exits[returned:])
                del frame.exits[returned:]
            for other in continues:
                end = State.join(end, other)
            if first:
                first_exits = [end, *breaks]
            else:
                later_exits = [end, *breaks]
            if per_element:
                end = end.copy()
                _distinct_per_element(per_element, entry, end, frame.loops)
            end = without_dead_releases(end, own, store)
            back = lattice.carry(end, loop, store.carry)
            if first:
                head = carried_first = back
                continue
            assert carried_first is not None
            new_head = State.join(carried_first, back)
            # (the graph grew, but not where this pass had read it: another pass runs the same)
            if ((new_head.same(head) or (rebinds is not None and rebinds(new_head.copy()).same(rebinds(head.copy()))))
                    and (store.changes == before or not run.reread)):
                break
            head = new_head
    finally:
        store.end_run()
        frame.loop_exits.pop()
        frame.loops = outer
        store.first_iterations = outer_first
    if entered:
        leaving = [without_dead_releases(other, own, store) for other in first_exits + later_exits]
    else:
        # Joined with the state before the loop (it may not run), a tensor
        # made before it, released in it and no longer bound (`alpha`
        # remade after each update) would read "bound and released" on one
        # path: its release is dropped where no binding reaches it.
        leaving = [entry] + [without_dead_releases(other, own, store, _released_since(entry, other))
                             for other in first_exits + later_exits]
    result = leaving[0]
    for other in leaving[1:]:
        result = State.join(result, other)
    return result


def _exec_with(frame: Frame, stmt: cst.With, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    no_grad = state.no_grad
    for item in stmt.items:
        expr = item.item
        func = expr.func if type(expr) is cst_nodes.Call else expr
        name = frame.canonical(func)
        if name in torch_api.NO_GRAD_CONTEXTS:
            no_grad = True
            continue
        if name in torch_api.GRAD_CONTEXTS:
            no_grad = False
            continue
        if name in torch_api.SET_GRAD and type(expr) is cst_nodes.Call and expr.args:
            flag = grad_mode.grad_enabled(expr.args[0].value, state, fact_keys(frame, state))
            if flag is not None:
                no_grad = not flag
            continue
        vals = frame.eval(expr, state)
        if item.asname is not None:
            frame.bind(item.asname.name, vals, state)
    saved = state.no_grad
    state.no_grad = no_grad
    state = frame.exec_block(stmt.body.body, state)
    state.no_grad = saved
    return state


def _exec_try(frame: Frame, stmt: cst.Try, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    body_end = frame.exec_block(stmt.body.body, state.copy())
    if stmt.orelse is not None:
        body_end = frame.exec_block(stmt.orelse.body.body, body_end)
    result = body_end
    # A handler may start anywhere in the body, even after a path that ended there.
    reached = replace(body_end, ended=False)
    for handler in stmt.handlers:
        start = State.join(state, reached)
        if handler.name is not None:
            start.env.pop(handler.name.name.value if type(handler.name.name) is cst_nodes.Name else "", None)
        result = State.join(result, frame.exec_block(handler.body.body, start))
    if stmt.finalbody is not None:
        result = frame.exec_block(stmt.finalbody.body.body, result)
    return result


def _exec_match(frame: Frame, stmt: cst.Match, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    frame.eval(stmt.subject, state)
    ends = [frame.exec_block(case.body.body, state.copy()) for case in stmt.cases]
    result = state
    for end in ends:
        result = State.join(result, end)
    return result


def _exec_def(frame: Frame, stmt: cst.FunctionDef, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    ref = frame.store.function_ref(stmt, frame.context, frame.loops)
    if not frame.is_module:
        ref.closure = state.env  # a closure sees its defining scope, later bindings included
        ref.obj = frame.obj
    state.env[stmt.name.value] = frozenset((ref,))
    return state


def _exec_class(frame: Frame, stmt: cst.ClassDef, state: State, block: Sequence[cst.CSTNode], index: int) -> State:
    info = frame.program.classes.get(stmt.name.value)
    is_module = info.is_module if info else False
    parametric = info.parametric if info else False
    state.env[stmt.name.value] = frozenset((ClassRef(stmt, is_module, parametric),))
    return state


# --------------------------------------------------------------- small statements


def _exec_assign(frame: Frame, small: cst.Assign, state: State) -> None:
    wrapped = _rewrapped_modules(frame, small, state)
    vals = frame.eval(small.value, state)
    if wrapped:
        unseen = [v for v in vals if isinstance(v, AbstractNode) and v.saves is ops.Saves.UNKNOWN]
        vals = vals.difference(unseen) | wrapped
    for target in small.targets:
        if type(target.target) is cst_nodes.Attribute and target.target.attr.value == "requires_grad":
            frame.set_requires_grad(target.target, literal_bool(small.value), state)
        else:
            frame.bind(target.target, vals, state)
    _note_assign_accumulation(frame, small, state)


def _rewrapped_modules(frame: Frame, small: cst.Assign, state: State) -> Vals:
    """The modules bound to `x` when `x = f(x, ...)` hands a module to a call
    and binds its result back to the module's own name (`model =
    apply_kernels(model, cfg)`, `self.model = Plugin(name)(self.model)`):
    what comes back is the module wrapped, not a tensor computed from it (no
    loss is bound to the name of the model it came from). An unseen call's
    result there would be a graph value made once, before the training loop,
    from the model's parameters, and every step's loss walks it."""
    value = small.value
    if type(value) is not cst_nodes.Call or not value.args or len(small.targets) != 1:
        return EMPTY
    first = value.args[0]
    name = dotted_name(first.value)
    if first.keyword is not None or first.star or name is None or dotted_name(small.targets[0].target) != name:
        return EMPTY
    return frozenset(v for v in frame.eval(first.value, state) if isinstance(v, ModuleRef))


def _exec_annassign(frame: Frame, small: cst.AnnAssign, state: State) -> None:
    if small.value is not None:
        frame.bind(small.target, frame.eval(small.value, state), state)


def _exec_expr(frame: Frame, small: cst.Expr, state: State) -> None:
    frame.eval(small.value, state)
    if type(small.value) is cst_nodes.Call:
        grad_mode.note_mode_switch(small.value, state)  # `model.eval()`: the path knows `model.training`


def _exec_return(frame: Frame, small: cst.Return, state: State) -> None:
    if small.value is not None:
        frame.returns.append(frame.eval(small.value, state))
    frame.exits.append(state.copy())
    state.ended = True


def _exec_continue(frame: Frame, small: cst.Continue, state: State) -> None:
    """The path goes back to the loop's head (with the state it has here)."""
    if frame.loop_exits:
        frame.loop_exits[-1][0].append(state.copy())
    state.ended = True


def _exec_break(frame: Frame, small: cst.Break, state: State) -> None:
    """The path leaves the loop (with the state it has here)."""
    if frame.loop_exits:
        frame.loop_exits[-1][1].append(state.copy())
    state.ended = True


def _exec_global(frame: Frame, small: cst.Global, state: State) -> None:
    frame.globals.update(n.name.value for n in small.names)


def _exec_del(frame: Frame, small: cst.Del, state: State) -> None:
    _delete(frame, small.target, state)


def _delete(frame: Frame, target: cst.BaseExpression, state: State) -> None:
    if type(target) in (cst_nodes.Tuple, cst_nodes.List):
        for element in target.elements:  # type: ignore[attr-defined]
            _delete(frame, element.value, state)
        return
    if type(target) is cst_nodes.Subscript and whole_slice(target):
        for lst in (v for v in frame.eval(target.value, state) if isinstance(v, ListRef)):
            state.env[lst.key] = EMPTY  # `del lst[:]` empties the container, every alias sees it
        return
    if type(target) is cst_nodes.Subscript:
        held = [v for v in frame.eval(target.value, state) if isinstance(v, ListRef) and v.mapping]
        for lst in held:  # `del d["loss"]`: that key's value is gone
            mappings.remove(state, lst, literal_key(target), len(held) == 1, frame.store.slot_names(lst))
    key = frame.target_key(target)
    if key is not None:
        state.env.pop(key, None)
        if state.facts or state.guards:
            state.rebound(key)



def _exec_assert(frame: Frame, small: cst.Assert, state: State) -> None:
    frame.eval(small.test, state)


def _exec_raise(frame: Frame, small: cst.Raise, state: State) -> None:
    if small.exc is not None:
        frame.eval(small.exc, state)
    state.ended = True


def _exec_augassign(frame: Frame, stmt: cst.AugAssign, state: State) -> None:
    prior = frame.eval(stmt.target, state)
    added = frame.eval(stmt.value, state)
    staleness.on_update(frame, stmt, prior, state)  # `p -= lr * p.grad` under no_grad changes `p` in place
    if type(stmt.target) is cst_nodes.Attribute and stmt.target.attr.value in ops.UNTRACKING_ATTRIBUTES:
        return  # `w.data += delta` writes the numbers of `w`, outside autograd: no graph is kept
    symbol = _AUG_SYMBOLS.get(type(stmt.operator))
    lists = [v for v in prior if isinstance(v, ListRef)]
    if lists and symbol == "+":
        elements = frame.elements(added, state)
        for lst in lists:
            state.env[lst.key] = state.env.get(lst.key, EMPTY) | elements
        _note_accumulation(frame, stmt, stmt.target, lists, elements, None, state)
        return
    parents = frame.graph_values(prior, state) + frame.graph_values(added, state)
    if not parents:
        frame.bind(stmt.target, EMPTY, state)
        return
    node = frame.store.node(frame, state, stmt, symbol or "op", parents, ops.operator_saves(symbol or "?"))
    frame.bind(stmt.target, frozenset((node,)), state)
    if symbol in ("+", "-"):
        _note_accumulation(frame, stmt, stmt.target, [], added, node, state)


def _note_assign_accumulation(frame: Frame, stmt: cst.Assign, state: State) -> None:
    """`total = total + x` (either order): the same accumulation as `+=`."""
    value = stmt.value
    if len(stmt.targets) != 1 or type(value) is not cst_nodes.BinaryOperation:
        return
    if type(value.operator) not in (cst_nodes.Add, cst_nodes.Subtract):
        return
    target = stmt.targets[0].target
    key = frame.target_key(target)
    if key is None:
        return
    left, right = frame.target_key(value.left), frame.target_key(value.right)
    if key not in (left, right):
        return
    other = value.right if left == key else value.left
    node = frame.store.existing(value, frame)
    if node is not None:
        _note_accumulation(frame, stmt, target, [], _eval_quiet(frame, other, state), node, state)


def _eval_quiet(frame: Frame, expr: cst.BaseExpression, state: State) -> Vals:
    """Re-read an operand already evaluated, without evaluating it again."""
    key = frame.target_key(expr)
    if key is not None:
        return frame.lookup(key, state)
    node = frame.store.existing(expr, frame)
    return frozenset((node,)) if node is not None else EMPTY


def _note_accumulation(frame: Frame, statement: cst.CSTNode, target: cst.BaseExpression,
                       lists: Sequence[ListRef], added: Vals, node: Optional[AbstractNode], state: State) -> None:
    frame.recorder.accumulation(frame.loops, frame.context, statement, target, lists,
                                frame.graph_values(added, state), node, state.no_grad)


def note_accumulation(frame: Frame, statement: cst.CSTNode, target: cst.BaseExpression,
                      lists: Sequence[ListRef], added: Vals, state: State,
                      node: Optional[AbstractNode] = None) -> None:
    """`lst.append(v)` and friends (an accumulation into a container), or
    `total.add_(v)` (into a running total, `node`)."""
    _note_accumulation(frame, statement, target, lists, added, node, state)


def _freeze_parameters_loop(frame: Frame, stmt: cst.For, state: State) -> None:
    """`for p in model.parameters(): p.requires_grad = False` freezes `model`."""
    it = stmt.iter
    if not (type(it) is cst_nodes.Call and type(it.func) is cst_nodes.Attribute):
        return
    if (it.func.attr.value not in torch_api.PARAMETER_METHODS
            or type(stmt.target) not in (cst_nodes.Name, cst_nodes.Tuple)):
        return
    if not _switches_off_gradients(stmt.body.body):
        return
    key = frame.target_key(it.func.value)
    if key is None:
        return
    if key == "self":  # `for p in self.parameters()` in a method: every submodule on `self`
        for name, vals in list(state.env.items()):
            if name.startswith("self."):
                state.env[name] = frozenset(replace(v, frozen=True) if isinstance(v, ModuleRef) else v for v in vals)
        return
    frame.freeze(key, frame.lookup(key, state), state)


def _switches_off_gradients(body: Sequence[cst.CSTNode]) -> bool:
    """Does a statement of `body` switch a tensor off: `x.requires_grad = False`
    or `x.requires_grad_(False)`?"""
    for stmt in walk_statements(body):
        if type(stmt) is cst_nodes.Assign:
            if literal_bool(stmt.value) is False and any(
                type(t.target) is cst_nodes.Attribute and t.target.attr.value == "requires_grad" for t in stmt.targets
            ):
                return True
        elif type(stmt) is cst_nodes.Expr and type(stmt.value) is cst_nodes.Call:
            call = stmt.value
            if (type(call.func) is cst_nodes.Attribute and call.func.attr.value == "requires_grad_" and call.args
                    and literal_bool(call.args[0].value) is False):
                return True
    return False


def has_loop(fn: cst.FunctionDef) -> bool:
    return any(type(stmt) in (cst_nodes.For, cst_nodes.While) for stmt in walk_statements(fn.body.body, False))


_COMPOUND: dict[type, Callable] = {
    cst.If: _exec_if,
    cst.For: _exec_for,
    cst.While: _exec_while,
    cst.With: _exec_with,
    cst.Try: _exec_try,
    cst.FunctionDef: _exec_def,
    cst.ClassDef: _exec_class,
    cst.Match: _exec_match,
}
if hasattr(cst, "TryStar"):
    _COMPOUND[cst.TryStar] = _exec_try
_SMALL: dict[type, Callable] = {
    cst.Assign: _exec_assign,
    cst.AnnAssign: _exec_annassign,
    cst.AugAssign: _exec_augassign,
    cst.Expr: _exec_expr,
    cst.Return: _exec_return,
    cst.Global: _exec_global,
    cst.Nonlocal: _exec_global,
    cst.Del: _exec_del,
    cst.Assert: _exec_assert,
    cst.Raise: _exec_raise,
    cst.Continue: _exec_continue,
    cst.Break: _exec_break,
}
