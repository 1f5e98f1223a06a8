"""Detach the carried value where each iteration starts (TL005): truncated
BPTT's `h = h.detach()`, shaped after what the value is bound to."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import libcst as cst

from tapelint.analysis.findings import CarriedHazard
from tapelint.analysis.names import bindings, declared_outer
from tapelint.analysis.torch_api import SHAPED_FACTORIES, TENSOR_STATE_MODULES, TUPLE_STATE_MODULES, callee_name
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, insert_before


class Shape(str, Enum):
    TENSOR = "tensor"
    TUPLE = "tuple"


@builder
def carry_detach_edits(hazard: CarriedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`h = h.detach()` as the first statement of each iteration: the loop body,
    or for a step method (`self.h` carried between calls) the method body.
    `tuple(t.detach() for t in h)` for a tuple state, and guarded by `if h is
    not None:` when the value starts as None. The shape is read from what the
    value is bound to (a literal, a tensor factory, an `nn.RNN`/`GRU` or `LSTM`
    constructed in this module) assuming, as the loop itself does when it feeds
    the value back, that it keeps its shape; unknown or conflicting: no edit."""
    loop = hazard.loop
    name = hazard.value
    attribute = name.startswith("self.") and name[5:].isidentifier()
    if not (name.isidentifier() or attribute):
        return ()
    # `self.h` carried by a method that a loop elsewhere calls: `self` exists in
    # the method, not at the loop, so each call of the method is the iteration.
    method = _method_outside(ctx, hazard.definition, loop.node) if attribute and not loop.implicit else None
    if loop.implicit or method is not None:
        body = getattr(method or loop.node, "body", None)
        if not attribute or not isinstance(body, cst.IndentedBlock):
            return ()
        statements = list(body.body)
        if _is_docstring(statements[0]):
            statements = statements[1:]
    elif isinstance(loop.node, (cst.For, cst.While)) and isinstance(loop.node.body, cst.IndentedBlock):
        statements = list(loop.node.body.body)
    else:
        return ()
    if not statements:
        return ()
    scope = ctx.names.ancestor(method or loop.node, (cst.ClassDef,) if attribute else (cst.FunctionDef,)) or ctx.module
    if declared_outer(scope, name):
        scope = ctx.module  # `global h`/`nonlocal h`: its other bindings live outside
    found = bindings(scope, name)
    shapes = {_shape(ctx, value, index) for value, index in found if not _is_none(value)} - {None}
    if len(shapes) != 1:
        return ()
    shape = shapes.pop()
    detached = f"tuple(t.detach() for t in {name})" if shape is Shape.TUPLE else f"{name}.detach()"
    lines = [f"{name} = {detached}"]
    if any(_is_none(value) for value, _ in found):
        lines = [f"if {name} is not None:", f"{ctx.module.default_indent}{lines[0]}"]
    return (insert_before(ctx, statements[0], lines),)


def _method_outside(ctx: SourceContext, definition: Optional[cst.CSTNode],
                    loop: cst.CSTNode) -> Optional[cst.FunctionDef]:
    """The method of a class that `definition` is in, when `loop` is not inside it."""
    method = ctx.names.ancestor(definition, (cst.FunctionDef,)) if definition is not None else None
    if not isinstance(method, cst.FunctionDef) or ctx.names.within(loop, method):
        return None
    return method if isinstance(ctx.names.ancestor(method, (cst.ClassDef, cst.FunctionDef)), cst.ClassDef) else None


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_none(value: Optional[cst.BaseExpression]) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _shape(ctx: SourceContext, value: Optional[cst.BaseExpression], index: Optional[int]) -> Optional[Shape]:
    """The shape of a binding, None when it cannot be told."""
    if value is None:
        return None
    if index is not None:
        if isinstance(value, (cst.Tuple, cst.List)) and index < len(value.elements):
            return _shape(ctx, value.elements[index].value, None)
        # `out, h = rnn(x, h)`: the state is the second result of an nn.RNN/GRU/LSTM.
        module = _module_class(ctx, value) if index == 1 else None
        if module in TENSOR_STATE_MODULES and not module.endswith("Cell"):
            return Shape.TENSOR
        if module == "LSTM":
            return Shape.TUPLE
        return None
    if isinstance(value, (cst.Tuple, cst.List)):
        return Shape.TUPLE
    if isinstance(value, cst.Call):
        name = callee_name(value)
        if isinstance(value.func, cst.Attribute) and name in SHAPED_FACTORIES:
            return Shape.TENSOR
        module = _module_class(ctx, value)
        if module in ("RNNCell", "GRUCell"):
            return Shape.TENSOR
        if module == "LSTMCell":
            return Shape.TUPLE
        return None
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return Shape.TENSOR
    return None


def _module_class(ctx: SourceContext, call: cst.BaseExpression) -> Optional[str]:
    """`rnn(x, h)` with `rnn = nn.RNN(...)` (or `self.rnn = ...`) in this module -> "RNN"."""
    if not isinstance(call, cst.Call):
        return None
    name = callee_name(call)
    classes = {callee_name(v) for v in ctx.assigned.get(name, []) if isinstance(v, cst.Call)}
    known = classes & (TENSOR_STATE_MODULES | TUPLE_STATE_MODULES)
    return known.pop() if len(classes) == 1 and known else None
