"""Expressions: what each kind of expression evaluates to (a set of abstract
values), one function per node type in the `EVAL` table, keyed by exact type
(libcst's ABC-based isinstance is measurably slow on this hot path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, mappings, paths, staleness, torch_api
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp.attributes import attribute_values
from tapelint.analysis.interp.calls import eval_call, first_party, pretrained
from tapelint.analysis.interp.statements import fact_keys, tensor_test
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    Carried,
    ClassRef,
    ListRef,
    ModuleFactory,
    ModuleRef,
    OptimizerClass,
    TupleVal,
    tuple_of,
)
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.syntax import isinstance_test, plain_string
from tapelint.ops import Saves

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

_BINARY_SYMBOLS = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/",
    cst.FloorDivide: "//", cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@",
}


def eval_children(frame: Frame, expr: cst.CSTNode, state: State) -> Vals:
    """Expressions that hold no graph themselves but may contain calls
    (an f-string that prints `loss.item()`): evaluate the parts."""
    if type(expr) is cst_nodes.FormattedString:
        for part in expr.parts:
            if type(part) is cst_nodes.FormattedStringExpression:
                frame.eval(part.expression, state)
    elif type(expr) is cst_nodes.ConcatenatedString:
        frame.eval(expr.left, state)
        frame.eval(expr.right, state)
    elif type(expr) is cst_nodes.Slice:
        for bound in (expr.lower, expr.upper, expr.step):
            if bound is not None:
                frame.eval(bound, state)
    elif type(expr) is cst_nodes.StarredElement:
        value = getattr(expr, "value", None)
        if isinstance(value, cst.BaseExpression):
            frame.eval(value, state)
    return EMPTY


def eval_yield(frame: Frame, expr: cst.Yield, state: State) -> Vals:
    """What a generator produces (`yield x`, `yield from xs`), kept on the
    frame; what is sent back in is unknown to the analysis (nothing)."""
    value = expr.value
    if isinstance(value, cst.From):
        frame.yields.append(frame.elements(frame.eval(value.item, state), state))
    elif value is not None:
        frame.yields.append(frame.eval(value, state))
    else:
        frame.yields.append(EMPTY)
    return EMPTY


def eval_name(frame: Frame, expr: cst.Name, state: State) -> Vals:
    """A bound name (`Frame.resolve`), else a definition of the module, else
    an import or a builtin (no graph), else unknown."""
    name = expr.value
    if name in ("True", "False", "None"):
        return EMPTY
    vals = frame.resolve(name, state)
    if vals is not None:
        return vals
    program = frame.program
    fn = program.functions.get(name)
    if fn is not None:
        return frozenset((frame.store.function_ref(fn, (), ()),))
    info = program.classes.get(name)
    if info is not None:
        return frozenset((ClassRef(info.node, info.is_module, info.parametric),))
    lent = first_party(frame, name)
    if lent is not None:
        return lent
    if name in program.imports.aliases or name in torch_api.BUILTIN_NAMES:
        return library_value(frame, expr)
    return frozenset((OPAQUE,))


def library_value(frame: Frame, expr: cst.BaseExpression) -> Vals:
    """An imported name read as a value (`optim.Adam`, `F.relu`,
    `torch.float32`): a torch optimizer class is one (`OptimizerClass`);
    anything else holds no graph."""
    name = frame.canonical(expr)
    return frozenset((OptimizerClass(name),)) if name is not None and staleness.is_optimizer_class(name) else EMPTY


def eval_attribute(frame: Frame, expr: cst.Attribute, state: State) -> Vals:
    key = dotted_name(expr)
    if key is not None:
        head = key.split(".")[0]
        if head not in state.env and (lent := first_party(frame, key)) is not None:
            return lent  # `models.Net`: a class of another module
        if head in frame.program.imports.aliases and head not in state.env:
            return library_value(frame, expr)  # torch.float32, np.pi: module attributes, not tensors
        vals = frame.resolve(key, state)
        if vals is not None:
            return vals
    attr = expr.attr.value
    if key is not None and torch_api.builds_pretrained_module(key, attr):
        # `from_fn = model_class.from_pretrained`: what calling it later gives
        return frozenset(ModuleFactory(v) for v in pretrained(frame, expr, state) if isinstance(v, ModuleRef))
    return attribute_values(frame, expr, frame.eval(expr.value, state), attr, state)


def eval_binary(frame: Frame, expr: cst.BinaryOperation, state: State) -> Vals:
    left = frame.eval(expr.left, state)
    right = frame.eval(expr.right, state)
    symbol = _BINARY_SYMBOLS.get(type(expr.operator))
    lists = [v for v in left | right if isinstance(v, ListRef)]
    if lists and symbol == "+":
        return frozenset(lists)
    parents = frame.graph_values(left, state) + frame.graph_values(right, state)
    if not parents:
        return EMPTY
    if symbol is None:  # bitwise operators: masks, never graph
        return EMPTY
    return frozenset((frame.store.node(frame, state, expr, symbol, parents, ops.operator_saves(symbol)),))


def eval_unary(frame: Frame, expr: cst.UnaryOperation, state: State) -> Vals:
    vals = frame.eval(expr.expression, state)
    if type(expr.operator) in (cst_nodes.Not, cst_nodes.BitInvert):
        return EMPTY
    parents = frame.graph_values(vals, state)
    if not parents or type(expr.operator) is cst_nodes.Plus:
        return vals
    return frozenset((frame.store.node(frame, state, expr, "neg", parents, Saves.NOTHING),))


def eval_compare(frame: Frame, expr: cst.Comparison, state: State) -> Vals:
    frame.eval(expr.left, state)
    for target in expr.comparisons:
        frame.eval(target.comparator, state)
    return EMPTY


def eval_boolean(frame: Frame, expr: cst.BooleanOperation, state: State) -> Vals:
    return frame.eval(expr.left, state) | frame.eval(expr.right, state)


def eval_ifexp(frame: Frame, expr: cst.IfExp, state: State) -> Vals:
    """Both arms, unless the path's facts decide the test (`x if eager else
    y` in a call `run(False)`)."""
    frame.eval(expr.test, state)
    known = paths.decide(expr.test, state.facts, fact_keys(frame, state))
    tested = _tests_for_a_number(expr.test) if known is None else None
    if tested is not None:
        known = False if _only_tensors_with_history(frame, tested, state) else None
    tensor = tensor_test(frame, expr.test) if known is None else None
    if tensor is not None and _only_tensors_with_history(frame, tensor[0], state):
        known = not tensor[1]  # `v.item() if isinstance(v, torch.Tensor) else v`, given a loss
    if known is not None:
        return frame.eval(expr.body if known else expr.orelse, state)
    return frame.eval(expr.body, state) | frame.eval(expr.orelse, state)


_NUMBER_TYPES = frozenset(("int", "float", "complex", "bool", "numbers.Number", "numbers.Real", "numbers.Integral"))


def _tests_for_a_number(test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`x` of `isinstance(x, numbers.Number)` (or int, float, a tuple of such), else None."""
    tested = isinstance_test(test)
    if tested is None:
        return None
    return tested[0] if all(dotted_name(n) in _NUMBER_TYPES for n in tested[1]) else None


def _only_tensors_with_history(frame: Frame, tested: cst.BaseExpression, state: State) -> bool:
    """Does `tested` hold only tensors with history? Then it is no Python
    number (pyro's `torch_item`, `x if isinstance(x, numbers.Number) else
    x.item()`, given a loss takes the `.item()` arm) and it is a tensor."""
    vals = frame.eval(tested, state)
    nodes = [v.node if isinstance(v, Carried) else v for v in vals]
    return bool(nodes) and all(isinstance(n, AbstractNode) and n is not OPAQUE and frame.store.is_tracked(n)
                               for n in nodes)


def eval_subscript(frame: Frame, expr: cst.Subscript, state: State) -> Vals:
    base = frame.eval(expr.value, state)
    literal_index: Optional[int] = None
    literal_key: Optional[str] = None
    basic = True
    for element in expr.slice:
        if type(element.slice) is cst_nodes.Index:
            index_expr = element.slice.value
            vals = frame.eval(index_expr, state)
            if type(index_expr) is cst_nodes.Integer:
                literal_index = int(index_expr.value, 0)
            elif type(index_expr) is cst_nodes.SimpleString and len(expr.slice) == 1:
                literal_key = plain_string(index_expr)
            elif type(index_expr) in (cst_nodes.List, cst_nodes.Tuple) or frame.graph_values(vals, state):
                basic = False
        elif type(element.slice) is cst_nodes.Slice:
            eval_children(frame, element.slice, state)
    out: set = set()
    tensors = []
    for value in base:
        if isinstance(value, ListRef):
            out |= mappings.read(state, value, literal_key) if value.mapping else state.env.get(value.key, EMPTY)
        elif isinstance(value, TupleVal):
            if literal_index is not None and -len(value.items) <= literal_index < len(value.items):
                out |= value.items[literal_index]
            else:
                out |= frozenset(x for item in value.items for x in item)
        elif isinstance(value, (AbstractNode, Carried)):
            if value is OPAQUE:
                out.add(OPAQUE)
            elif literal_key is not None and _unseen_call_result(value):
                out.add(frame.store.element(value, literal_key))  # type: ignore[arg-type]
            else:
                tensors.append(value)
        elif isinstance(value, ModuleRef):
            out.add(value)
        else:
            out.add(OPAQUE)
    if tensors:
        saves = Saves.NOTHING if basic else Saves.TENSORS
        out.add(frame.store.node(frame, state, expr, "index", tensors, saves))
    return frozenset(out)


def _unseen_call_result(value: object) -> bool:
    """The result of a call whose graph is unknown (a model the analysis
    does not resolve, `self.network(...)` built from a config)."""
    return isinstance(value, AbstractNode) and value.saves is Saves.UNKNOWN and not value.leaf and bool(value.parents)


def eval_sequence(frame: Frame, expr: cst.CSTNode, state: State) -> Vals:
    items = []
    for element in expr.elements:  # type: ignore[attr-defined]
        vals = frame.eval(element.value, state)
        if type(element) is cst_nodes.StarredElement:
            vals = frame.elements(vals, state)
        items.append(vals)
    if type(expr) is cst_nodes.Tuple:
        return frozenset((tuple_of(items),))
    return frozenset((frame.new_list(expr, frozenset(x for item in items for x in item), state),))


def eval_dict(frame: Frame, expr: cst.Dict, state: State) -> Vals:
    rest: set = set()
    slots: dict[str, Vals] = {}
    for element in expr.elements:
        if type(element) is cst_nodes.DictElement:
            frame.eval(element.key, state)
            vals = frame.eval(element.value, state)
            name = plain_string(element.key) if type(element.key) is cst_nodes.SimpleString else None
            if name is not None:
                slots[name] = vals  # a later entry of the same key replaces it
            else:
                rest |= vals
        else:  # `{**batch, "labels": y}`: what `batch` holds, key by key when it is a mapping
            spread = frame.eval(element.value, state)
            if (source := mappings.sole(spread)) is not None:
                copied, held = mappings.contents(state, source, frame.store.slot_names(source))
                slots.update(copied)
                rest |= held
            else:
                rest |= frame.elements(spread, state, values=True)
    return frozenset((frame.new_list(expr, frozenset(rest), state, mapping=True, slots=slots),))


def eval_comprehension(frame: Frame, expr: cst.CSTNode, state: State) -> Vals:
    inner = state.copy()
    comp = expr.for_in  # type: ignore[attr-defined]
    while comp is not None:
        frame.bind(comp.target, frame.elements(frame.eval(comp.iter, inner), inner), inner)
        for condition in comp.ifs:
            frame.eval(condition.test, inner)
        comp = comp.inner_for_in
    if type(expr) is cst_nodes.DictComp:
        frame.eval(expr.key, inner)
        produced = frame.eval(expr.value, inner)
    else:
        produced = frame.eval(expr.elt, inner)  # type: ignore[attr-defined]
    state.released.update(inner.released)
    return frozenset((frame.new_list(expr, produced, state, mapping=type(expr) is cst_nodes.DictComp),))


def eval_named(frame: Frame, expr: cst.NamedExpr, state: State) -> Vals:
    vals = frame.eval(expr.value, state)
    frame.bind(expr.target, vals, state)
    return vals


def eval_nothing(frame: Frame, expr: cst.CSTNode, state: State) -> Vals:
    """Literals."""
    return EMPTY


def eval_lambda(frame: Frame, expr: cst.Lambda, state: State) -> Vals:
    """A lambda is the function it is: `lambda: (x * 2).sum()` called later
    (from a list of them, a dict, an optimizer's closure argument) is
    interpreted like a `def` whose body returns the expression, with the
    names it sees where it was made. The store keeps one such function per
    lambda and placement, so loop passes see the same one."""
    ref = frame.store.function_ref(expr, frame.context, frame.loops)  # type: ignore[arg-type]
    if type(ref.node) is cst_nodes.Lambda:
        body = cst_nodes.IndentedBlock([cst_nodes.SimpleStatementLine([cst_nodes.Return(expr.body)])])
        ref.node = cst_nodes.FunctionDef(cst_nodes.Name("lambda"), expr.params, body)
        project = frame.program.project
        if project is not None:
            project.homes.setdefault(ref.node, frame.program)
    ref.closure = state.env
    return frozenset((ref,))


def eval_await(frame: Frame, expr: cst.Await, state: State) -> Vals:
    return frame.eval(expr.expression, state)


# Each takes (frame, the node of its type, state).
EVAL: dict[type, Callable[..., Vals]] = {
    cst.Name: eval_name,
    cst.Attribute: eval_attribute,
    cst.Call: eval_call,
    cst.BinaryOperation: eval_binary,
    cst.UnaryOperation: eval_unary,
    cst.Comparison: eval_compare,
    cst.BooleanOperation: eval_boolean,
    cst.IfExp: eval_ifexp,
    cst.Subscript: eval_subscript,
    cst.Tuple: eval_sequence,
    cst.List: eval_sequence,
    cst.Set: eval_sequence,
    cst.Dict: eval_dict,
    cst.ListComp: eval_comprehension,
    cst.SetComp: eval_comprehension,
    cst.GeneratorExp: eval_comprehension,
    cst.DictComp: eval_comprehension,
    cst.NamedExpr: eval_named,
    cst.Lambda: eval_lambda,
    cst.Integer: eval_nothing,
    cst.Float: eval_nothing,
    cst.Imaginary: eval_nothing,
    cst.SimpleString: eval_nothing,
    cst.Ellipsis: eval_nothing,
    cst.Await: eval_await,
    cst.Yield: eval_yield,
}
