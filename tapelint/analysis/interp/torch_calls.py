"""Calls into torch: `torch.*` functions, tensor methods, and the calls that
walk a graph (backward events). What each name means comes from
`torch_api` and the op table (`tapelint.ops`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, paths, staleness, torch_api
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp import grad_mode, iteration
from tapelint.analysis.interp.statements import fact_keys, note_accumulation
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    Carried,
    FunctionRef,
    GraphValue,
    MethodRef,
    ModuleRef,
    Retains,
    Tracked,
    TupleVal,
    Value,
    tuple_of,
)
from tapelint.analysis.shapes import reduces_to_one
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.syntax import keyword_value
from tapelint.analysis.torch_api import literal_bool
from tapelint.literals import call_arguments
from tapelint.ops import Saves

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame


def torch_call(frame: Frame, call: cst.Call, name: str, args: list, state: State) -> Vals:
    """A call of `torch.<name>` (canonical name)."""
    last = name.rsplit(".", 1)[-1]
    store = frame.store
    if name in torch_api.AUTOGRAD_WALKS:
        roots = args[0][1] if args else EMPTY
        backward(frame, call, roots, state, name + "(...)", positional_offset=3 if last == "grad" else 2,
                 is_grad=last == "grad", inputs=_grad_inputs(frame, args, state) if last == "grad" else frozenset())
        if last != "grad":
            return EMPTY
        return _gradients(frame, call, args, state)
    if name in iteration.DATA_LOADERS:
        return iteration.data_loader(frame, call, args, state)
    if name in torch_api.SET_GRAD and args:
        flag = grad_mode.grad_enabled(call.args[0].value, state, fact_keys(frame, state))
        if flag is not None:
            state.no_grad = not flag
        return EMPTY
    if name in torch_api.PARAMETER_CLASSES:
        flag = literal_bool(keyword_value(call, "requires_grad"))
        tracked = Tracked.NO if flag is False else Tracked.YES
        return frozenset((store.node(frame, state, call, "Parameter", (), Saves.NOTHING, tracked, leaf=True),))
    if name.startswith("torch.nn.") and last[:1].isupper() and not name.startswith("torch.nn.functional"):
        saves = ops.module_saves(last, call_arguments(call))
        layers = tuple(vals for keyword, vals in args if keyword is None) if last == "Sequential" else ()
        if not any(isinstance(v, ModuleRef) and v.user_class is not None for vals in layers for v in vals):
            layers = ()  # torch's layers alone: the Sequential is one layer of the op table
        return frozenset((ModuleRef(last, last in ops.PARAMETRIC_MODULES, saves,
                                    recurrent=last in ops.RECURRENT_MODULES, site=call, layers=layers),))
    if staleness.is_optimizer_class(name):
        return staleness.optimizer(frame, call, args, state)
    if last in torch_api.FACTORIES:
        requires = keyword_value(call, "requires_grad")
        flag = literal_bool(requires)
        tracked = Tracked.YES if flag else Tracked.NO if requires is None or flag is False else Tracked.UNKNOWN
        return frozenset((store.node(frame, state, call, last, (), Saves.NOTHING, tracked, leaf=True),))
    if name.startswith(torch_api.GRAPHLESS_NAMESPACES) or last in ops.UNTRACKING:
        return EMPTY
    parents = [p for _, v in args for p in frame.graph_values(v, state)]
    if not parents:
        return EMPTY
    node = store.node(frame, state, call, last, parents, ops.function_saves(last))
    node.reduces_all = reduces_to_one(call, last, method=False)
    if torch_api.is_distribution_class(name):
        node.distribution = True
    return frozenset((node,))


def _gradients(frame: Frame, call: cst.Call, args: list, state: State) -> Vals:
    """What `torch.autograd.grad(outputs, inputs, ...)` returns. With a literal
    `create_graph=True` the gradients have history: their graph is built from
    what the walked graph saved, so it reaches back into the outputs' graph and
    the inputs (a PINN's `u_x`, a gradient penalty, MAML's fast weights);
    otherwise they are of unknown provenance, never reported."""
    if literal_bool(_walk_argument(call, "create_graph", 4)) is not True:
        return frozenset((OPAQUE,))
    parents = [p for index, keyword in ((0, "outputs"), (1, "inputs"))
               for p in frame.graph_values(iteration.argument_values(args, index, keyword), state)]
    if not parents:
        return frozenset((OPAQUE,))
    return frozenset((frame.store.node(frame, state, call, "grad", parents, Saves.TENSORS),))


def _walk_argument(call: cst.Call, keyword: str, position: int) -> Optional[cst.BaseExpression]:
    """A walk's argument by keyword, else at its position."""
    value = keyword_value(call, keyword)
    if value is not None:
        return value
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[position] if len(positional) > position else None
def _detach_in_place(frame: Frame, call: cst.Call, receiver: cst.BaseExpression, state: State) -> None:
    """`h.detach_()`, `hidden[0].detach_()`: the tensor itself loses its
    history, so what names it (the variable, or that position of the tuple
    the variable holds) holds a tensor without history from here on."""
    detached = frozenset((frame.store.node(frame, state, call, "detach_", (), Saves.NOTHING, Tracked.NO, leaf=True),))
    if type(receiver) in (cst_nodes.Name, cst_nodes.Attribute):
        frame.bind(receiver, detached, state)
        return
    index = _literal_position(receiver)
    if index is None or type(receiver.value) not in (cst_nodes.Name, cst_nodes.Attribute):  # type: ignore[attr-defined]
        return
    held = frame.eval(receiver.value, state)  # type: ignore[attr-defined]
    if any(isinstance(v, TupleVal) and -len(v.items) <= index < len(v.items) for v in held):
        replaced = frozenset(_with_position(v, index, detached) for v in held)
        frame.bind(receiver.value, replaced, state)  # type: ignore[attr-defined]


def _literal_position(expr: cst.BaseExpression) -> Optional[int]:
    """The literal position `t[1]` reads, if that is all it reads."""
    if type(expr) is not cst_nodes.Subscript or len(expr.slice) != 1:
        return None
    element = expr.slice[0].slice
    if type(element) is cst_nodes.Index and type(element.value) is cst_nodes.Integer:
        return int(element.value.value, 0)
    return None


def _with_position(value: object, index: int, item: Vals) -> object:
    """A tuple with `item` at `index` (any other value as it is)."""
    if not isinstance(value, TupleVal) or not -len(value.items) <= index < len(value.items):
        return value
    items = list(value.items)
    items[index] = item
    return tuple_of(items)


def layer_result(module: ModuleRef, node: AbstractNode) -> Value:
    """What a call of `module` returns, given its node (kept on the node:
    `made_by`): the node, or for a torch recurrent layer the tuple it
    returns with the node at each position — `(output, h)` of an `nn.RNN`/
    `GRU`, `(h, c)` of an `nn.LSTMCell`, `(output, (h, c))` of an `nn.LSTM` —
    so that what unpacks it gets the part it names (`analysis.shapes`)."""
    node.made_by |= {module}
    if module.user_class is not None:
        return node
    one = frozenset((node,))
    if module.class_name in ("RNN", "GRU", "LSTMCell"):
        return tuple_of((one, one))
    if module.class_name == "LSTM":
        return tuple_of((one, frozenset((tuple_of((one, one)),))))
    return node


def tensor_method(frame: Frame, call: cst.Call, func: cst.Attribute, tensors: list, method: str, args: list,
                  state: State) -> Vals:
    """`t.<method>(...)` on tensors known to the analysis."""
    if method == "detach_":
        _detach_in_place(frame, call, func.value, state)
    if method in ops.UNTRACKING:
        return EMPTY
    if method in torch_api.DISTRIBUTION_SAMPLERS and all(_distribution(t) for t in tensors):
        # a sample has no history, whatever the distribution's parameters have
        return frozenset((frame.store.node(frame, state, call, method, (), Saves.NOTHING, Tracked.NO, leaf=True),))
    if method == "requires_grad_":
        flag = literal_bool(call.args[0].value) if call.args else True
        if flag is False:
            return EMPTY
        tracked = Tracked.YES if flag else Tracked.UNKNOWN
        leaf = frame.store.node(frame, state, call, "requires_grad_", (), Saves.NOTHING, tracked, leaf=True)
        key = frame.target_key(func.value)
        if key is not None:
            state.env[key] = frozenset((leaf,))
        return frozenset((leaf,))
    if method == "copy_" and args:
        copied = frozenset(frame.graph_values(args[0][1], state))
        if copied:
            return _copy_into(frame, func.value, frozenset(tensors), copied, state)
    if method == "register_hook" and args:
        _register_hooks(frame, tensors, args[0][1] | _own_method(frame, call.args[0].value))
    if method in torch_api.TENSOR_SELF_METHODS:
        return frozenset(tensors)
    parents = list(tensors) + [p for _, v in args for p in frame.graph_values(v, state)]
    node = frame.store.node(frame, state, call, method, parents, ops.function_saves(method))
    node.reduces_all = reduces_to_one(call, method, method=True)
    if method.endswith("_") and not method.endswith("__"):
        key = frame.target_key(func.value)
        if key is not None:
            state.env[key] = frozenset((node,))
        _mutated_in_place(tensors, node, key, state)
        if method in torch_api.IN_PLACE_ADDERS and args:
            # `total.add_(loss)`: `total += loss` by another spelling
            note_accumulation(frame, call, func.value, [], args[0][1], state, node)
    return frozenset((node,))


def _mutated_in_place(tensors: list, node: AbstractNode, key: Optional[str], state: State) -> None:
    """An in-place method changes the tensor object itself: every binding that
    holds it (a dict entry on an object, another name, a list slot) holds the
    new version, `node`, afterwards. A receiver that may be one of several
    tensors leaves each binding holding either. Leaves with a gradient (a
    parameter, an unknown value) are left alone: an in-place op on one is an
    update (`staleness`), not a new value of every alias."""
    mutated = frozenset(t for t in tensors if isinstance(t, Carried) or not (t.leaf and t.tracked is not Tracked.NO))
    if not mutated:
        return
    strong = len(tensors) == 1
    for name, vals in list(state.env.items()):
        if name == key or vals.isdisjoint(mutated):
            continue
        state.env[name] = (vals - mutated if strong else vals) | {node}


def _distribution(value: GraphValue) -> bool:
    return (value.node if isinstance(value, Carried) else value).distribution


def _copy_into(frame: Frame, receiver: cst.BaseExpression, tensors: Vals, copied: Vals, state: State) -> Vals:
    """`buffer[step].copy_(value)`: the buffer now holds what was copied in, with
    its history, besides what it held (PyTorch's CopySlices keeps both graphs),
    like a container of the values written into it."""
    written = receiver
    while type(written) is cst_nodes.Subscript:
        written = written.value
    if type(written) in (cst_nodes.Name, cst_nodes.Attribute):
        held = tensors if written is receiver else frame.eval(written, state)
        frame.bind(written, held | copied, state)
    return tensors | copied


def _grad_inputs(frame: Frame, args: list, state: State) -> frozenset[AbstractNode]:
    """The nodes `torch.autograd.grad(outputs, inputs)` differentiates with
    respect to (an earlier iteration's stands for its site's)."""
    given = [vals for keyword, vals in args if keyword == "inputs"] or [vals for keyword, vals in args[1:2]
                                                                         if keyword is None]
    held = _graph_values_held(frame, frozenset(v for vals in given for v in vals), state)
    return frozenset(v.node if isinstance(v, Carried) else v for v in held)


def _graph_values_held(frame: Frame, vals: Vals, state: State) -> list:
    """The known graph values of `vals` and of what they hold (a list of losses)."""
    held = frame.elements(vals, state, values=True)
    return [v for v in frame.graph_values(held | vals, state) if v is not OPAQUE]


def backward(frame: Frame, call: cst.Call, roots: Vals, state: State, api: str, positional_offset: Optional[int],
             is_grad: bool = False, inputs: frozenset[AbstractNode] = frozenset()) -> None:
    """A call that walks the graph of `roots`: whether it retains decides what
    it releases (`retain_graph`/`create_graph`, by keyword or by position);
    the walk of an `autograd.grad` stops at its `inputs`."""
    if positional_offset is not None:
        retain = _walk_argument(call, "retain_graph", positional_offset)
        create = _walk_argument(call, "create_graph", positional_offset + 1)
    else:
        retain, create = keyword_value(call, "retain_graph"), keyword_value(call, "create_graph")
    retain_flag, create_flag = _flag(frame, retain, state), _flag(frame, create, state)
    creates = create_flag is True
    if creates or retain_flag is True:
        retains = Retains.YES
    elif (retain is not None and retain_flag is None) or (create is not None and create_flag is None):
        retains = Retains.UNKNOWN
    elif keyword_value(call, "inputs") is not None:
        retains = Retains.UNKNOWN  # a partial walk frees only part of the graph
    else:
        retains = Retains.NO
    _walk(frame, call, roots, state, api, retains, is_grad, creates, inputs)


def _register_hooks(frame: Frame, tensors: list, hooks: Vals) -> None:
    """`y.register_hook(fn)`: a backward that reaches `y` runs `fn` (a
    function or an object's method of the project; a library's hook does
    nothing the analysis sees)."""
    for hook in hooks:
        if not isinstance(hook, (FunctionRef, MethodRef)):
            continue
        for node in tensors:
            if isinstance(node, AbstractNode) and node is not OPAQUE and not any(h is hook for h in node.hooks):
                node.hooks += (hook,)
                frame.store.hooked = True


def _own_method(frame: Frame, expr: cst.BaseExpression) -> Vals:
    """`self.forget` in a method run on an object: that object's method (as
    a value elsewhere, `self.<method>` stays unknown)."""
    if (type(expr) is cst_nodes.Attribute and type(expr.value) is cst_nodes.Name and expr.value.value == "self"
            and frame.obj is not None and frame.owner is not None and expr.attr.value in frame.owner.methods):
        return frozenset((MethodRef(frame.obj, expr.attr.value),))
    return EMPTY


def _flag(frame: Frame, expr: Optional[cst.BaseExpression], state: State) -> Optional[bool]:
    """A walk's `retain_graph=`/`create_graph=`: a literal, or a name the
    path's facts decide (a helper's `retain_graph=False` default left
    unpassed, `update(opt, loss)`); None when not known or not given."""
    if expr is None:
        return None
    known = literal_bool(expr)
    return known if known is not None else paths.decide(expr, state.facts, fact_keys(frame, state))


def walk_returned(frame: Frame, site: cst.CSTNode, roots: Vals, state: State, api: str) -> None:
    """A framework's backward of what a hook returned (`protocols`), reported at
    the hook's `return`: a plain walk, retaining nothing."""
    _walk(frame, site, roots, state, api, Retains.NO, False, False)


def _walk(frame: Frame, site: cst.CSTNode, roots: Vals, state: State, api: str, retains: Retains, is_grad: bool,
          creates: bool, inputs: frozenset[AbstractNode] = frozenset()) -> None:
    graph_roots = _graph_values_held(frame, roots, state)
    # A framework's walk has no call of its own: it is placed at the returned
    # expression, of which only the position is read (it retains nothing, so no
    # `retain_graph` argument of it is ever looked up).
    event = frame.store.event(site, frame, graph_roots, retains, frame.scope, api, is_grad,  # type: ignore[arg-type]
                              creates)
    if not inputs <= event.inputs:
        event.inputs |= inputs
    if frame.owner is not None:
        # In a method, an unknown object kept on `self` (`self.actor_critic`) is
        # what the object trains; a parameter of a plain function nobody here
        # passes stays unknown (its callers in other files report through it).
        functions = _named_functions(frame)
        for root in graph_roots:
            frame.store.prove_walked(walked_components(root, functions))
    frame.recorder.backward(event, graph_roots, state)
    if frame.store.hooked:
        frame.run_hooks(graph_roots, state)


def _named_functions(frame: Frame) -> frozenset[str]:
    """The names this module calls functions by: its imports (first-party
    ones included) and its own functions."""
    program = frame.program
    names = set(program.imports.aliases) | set(program.functions)
    if program.summary is not None:
        names.update(name for name, _ in program.summary.imports)
    return frozenset(names)


# A graph of unknown provenance this large is not searched for walked components.
MAX_COMPONENT_SEARCH = 400


def walked_components(root: GraphValue, functions: frozenset[str] = frozenset()) -> list[AbstractNode]:
    """The values a backward of `root` is known to walk, when
    `root` is of unknown provenance (an unknown model's output): a backward
    proves that the root is tracked, so at least one of its *origins* — the
    calls of unknown objects (`self.actor_critic.evaluate_actions(obs)`) it
    is computed from — is (opaque data is taken for data). A value the root
    is computed from is then walked too if it is computed from every one of
    those origins (`value_loss` of `value_loss * c - entropy * c2`, both from
    one model call), whatever its own inputs looked like. A root tracked by
    construction proves nothing about its components. A tensor operation on
    opaque data (`batch["w"].float()`) or a function called by the name it is
    imported or defined under (`functions`: `selective_log_softmax(logits)`)
    is not an origin. What went through `.item()`, `.detach()` ... is no
    graph value at all, so never a component."""
    start = root.node if isinstance(root, Carried) else root
    if start.tracked is not Tracked.UNKNOWN or start is OPAQUE:
        return []
    nodes: dict[int, AbstractNode] = {}
    children: dict[int, list[int]] = {}
    stack = [start]
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        if len(nodes) > MAX_COMPONENT_SEARCH:
            return []
        for parent in node.parents:
            parent_node = parent.node if isinstance(parent, Carried) else parent
            if parent_node is OPAQUE or parent_node.tracked is not Tracked.UNKNOWN:
                continue
            children.setdefault(id(parent_node), []).append(id(node))
            stack.append(parent_node)
    # One origin per unknown object called: `self.model(a)` and `self.model(b)` are one model.
    origins: dict[object, list[int]] = {}
    for key, node in nodes.items():
        if _is_origin(node, functions):
            callee = dotted_name(node.site.func) if type(node.site) is cst_nodes.Call else None
            origins.setdefault(callee or key, []).append(key)
    if not origins:
        return []
    reached_by: dict[int, set[object]] = {}  # node id -> the origins it is computed from
    for origin, starts in origins.items():
        seen = set(starts)
        work = list(starts)
        while work:
            key = work.pop()
            reached_by.setdefault(key, set()).add(origin)
            for child in children.get(key, ()):
                if child not in seen:
                    seen.add(child)
                    work.append(child)
    return [nodes[key] for key, found in reached_by.items() if len(found) == len(origins) and not nodes[key].leaf]


def _is_origin(node: AbstractNode, functions: frozenset[str]) -> bool:
    """Is `node` where unknown provenance may enter the graph from something
    that may own parameters — a call of an unknown object (a parameter, an
    attribute), or the result of a function not looked into — rather than a
    tensor operation on data (operators, indexing, `float()`, the op table's
    functions) or a function named by its import or definition?"""
    site = node.site
    if type(site) is not cst_nodes.Call:
        return node.leaf
    func = site.func
    name = func.attr.value if type(func) is cst_nodes.Attribute else func.value if type(func) is cst_nodes.Name else ""
    head = (dotted_name(func) or "").partition(".")[0]
    if head in functions:
        return False
    return ops.function_saves(name) is Saves.UNKNOWN and name not in torch_api.DATA_METHODS
