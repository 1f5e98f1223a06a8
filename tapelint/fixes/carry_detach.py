"""Detach the carried value where each iteration starts (TL005): truncated
BPTT's `h = h.detach()`, shaped after what the value is bound to."""

from __future__ import annotations

from enum import Enum
from typing import Optional, cast

import libcst as cst

from tapelint.analysis.findings import CarriedHazard
from tapelint.analysis.names import bindings, declared_outer
from tapelint.analysis.shapes import ValueShape
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, guarded, insert_before


class Shape(str, Enum):
    TENSOR = "tensor"
    TUPLE = "tuple"


@builder
def carry_detach_edits(hazard: CarriedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`h = h.detach()` as the first statement of each iteration (`detach_placed`)."""
    placed = detach_placed(hazard, ctx)
    if placed is None:
        return ()
    first, lines = placed
    return (insert_before(ctx, first, lines),)


@guarded(cast(Optional[str], None))
def detach_statement(hazard: CarriedHazard, ctx: SourceContext) -> Optional[str]:
    """The statement that detaches the carried value (what the message quotes and
    the fix inserts), None when no edit is possible."""
    placed = detach_placed(hazard, ctx)
    return placed[1][-1].strip() if placed is not None else None


def detach_placed(hazard: CarriedHazard, ctx: SourceContext) -> Optional[tuple[cst.BaseStatement, list[str]]]:
    """Where `h = h.detach()` goes and its lines: before the first statement of
    the loop body, or for a step method (`self.h` carried between calls) of the
    method body. `tuple(t.detach() for t in h)` for a tuple state, and guarded
    by `if h is not None:` when the value starts as None. The shape is what the
    analysis saw bound to the value at each of its bindings in the scope
    (`_shape`); unknown or conflicting: None."""
    loop = hazard.loop
    name = hazard.value
    attribute = name.startswith("self.") and name[5:].isidentifier()
    if not (name.isidentifier() or attribute):
        return None
    # `self.h` carried by a method that a loop elsewhere calls: `self` exists in
    # the method, not at the loop, so each call of the method is the iteration.
    method = _method_outside(ctx, hazard.definition, loop.node) if attribute and not loop.implicit else None
    if method is not None and hazard.remade_in_inner_loop:
        return None  # each call of the method is a step of an inner loop, not an iteration of `loop`
    if loop.implicit or method is not None:
        body = getattr(method or loop.node, "body", None)
        if not attribute or not isinstance(body, cst.IndentedBlock):
            return None
        statements = list(body.body)
        if _is_docstring(statements[0]):
            statements = statements[1:]
    elif isinstance(loop.node, (cst.For, cst.While)) and isinstance(loop.node.body, cst.IndentedBlock):
        statements = list(loop.node.body.body)
    else:
        return None
    if not statements:
        return None
    scope = ctx.names.ancestor(method or loop.node, (cst.ClassDef,) if attribute else (cst.FunctionDef,)) or ctx.module
    if declared_outer(scope, name):
        scope = ctx.module  # `global h`/`nonlocal h`: its other bindings live outside
    found = bindings(scope, name)
    shapes = {_shape(hazard, value, index) for value, index in found if value is not None and not _is_none(value)}
    if len(shapes) != 1 or None in shapes:
        return None
    shape = shapes.pop()
    detached = f"tuple(t.detach() for t in {name})" if shape is Shape.TUPLE else f"{name}.detach()"
    lines = [f"{name} = {detached}"]
    if any(_is_none(value) for value, _ in found):
        lines = [f"if {name} is not None:", f"{ctx.module.default_indent}{lines[0]}"]
    return statements[0], lines


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


def _shape(hazard: CarriedHazard, value: cst.BaseExpression, index: Optional[int]) -> Optional[Shape]:
    """The shape of one binding as the analysis saw it (`CarriedHazard.binding_shapes`:
    the state an `nn.GRU` returns second is a tensor, an `nn.LSTM`'s an `(h, c)`
    tuple, as is what a project module's `forward` returns there), None when
    it is neither."""
    for bound, position, shape in hazard.binding_shapes:
        if bound is value and position == index:
            if shape.tensor:
                return Shape.TENSOR
            return Shape.TUPLE if shape is ValueShape.TUPLE else None
    return None
