"""What the fixes need to know that only the analysis knows, put on the
hazards once the module is interpreted (before its graph is released), so
no fix builder re-derives it from the source text:

* the shape of the expression an edit would call `.detach()`/`.item()` on
  (`analysis.shapes`): the definition of a hoisted value (TL001), the value
  added to a total (TL003), the shared sample of a GAN step (TL002);
* each TL002 loss's part in its training step (`analysis.updates`): which
  of the two losses may have the shared sample detached.

Plain enums only, so a hazard stays plain data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.anchors import Located
from tapelint.analysis.findings import AccumulationHazard, CarriedHazard, Hazard, HoistedHazard, SharedHazard
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.names import bindings
from tapelint.analysis.shapes import ValueShape, expression_shape, joined
from tapelint.analysis.syntax import walk_statements
from tapelint.analysis.torch_api import IN_PLACE_ADDERS, callee_name
from tapelint.analysis.updates import StepLog, branch_role


def with_roles(hazards: Sequence[Hazard], steps: StepLog) -> list[Hazard]:
    """Each TL002 hazard with the part of its two losses (read on the
    module's own events, before `anchors.relocate` may move them)."""
    out: list[Hazard] = []
    for hazard in hazards:
        if isinstance(hazard, SharedHazard):
            first, second = (branch_role(e, steps.after.get(e, ()), hazard.definition)
                             for e in (hazard.first_backward, hazard.fails_at))
            hazard = replace(hazard, roles=(first, second))
        out.append(hazard)
    return out


def with_shapes(found: Sequence[Located], seen: Mapping[cst.CSTNode, ValueShape],
                bound: Mapping[str, ValueShape], module: cst.Module) -> list[Located]:
    """Each hazard with the shape of the expression its fixes would edit
    (placed in the linted `module`: after `anchors.relocate`)."""
    shapes = ModuleShapes(seen, bound, module)
    out = []
    for item in found:
        hazard = item.hazard
        if isinstance(hazard, HoistedHazard):
            hazard = replace(hazard, definition_shape=shapes.of(hazard.definition))
        elif isinstance(hazard, AccumulationHazard):
            hazard = _with_value_shape(hazard, shapes)
        elif isinstance(hazard, SharedHazard):
            sample = shapes.of(cst_nodes.Name(hazard.value)) if hazard.value.isidentifier() else ValueShape.OTHER
            if not shapes.of(hazard.definition).tensor:
                sample = ValueShape.OTHER
            hazard = replace(hazard, sample_shape=sample)
        elif isinstance(hazard, CarriedHazard):
            hazard = replace(hazard, binding_shapes=shapes.bindings(hazard.value))
        out.append(item if hazard is item.hazard else replace(item, hazard=hazard))
    return out


def _with_value_shape(hazard: AccumulationHazard, shapes: ModuleShapes) -> AccumulationHazard:
    """The hazard and the other statements adding into its total (`also`), each
    with the shape of what it adds: a merged fix edits every one of them."""
    also = tuple(_with_value_shape(other, shapes) for other in hazard.also)
    return replace(hazard, value_shape=shapes.of(accumulated_value(hazard)), also=also)


class ModuleShapes:
    """The shapes of one module's expressions (`analysis.shapes`). A name
    bound to `a if c else b` (or `a or b`) holds what either arm holds, but a
    number arm adds no abstract value: the binding's own arms are read, so
    `v = loss if c else 0.0` makes `v` a tensor or a number."""

    def __init__(self, seen: Mapping[cst.CSTNode, ValueShape], bound: Mapping[str, ValueShape],
                 module: cst.Module) -> None:
        self.seen, self.bound, self.module = seen, bound, module
        self._conditional: Optional[dict[str, list[cst.BaseExpression]]] = None

    def of(self, expr: Optional[cst.CSTNode]) -> ValueShape:
        if not isinstance(expr, cst.BaseExpression):
            return ValueShape.OTHER
        shape = expression_shape(expr, self.seen, self.bound)
        key = dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if key is None or shape is ValueShape.OTHER:
            return shape
        for value in self.conditional.get(key, ()):
            shape = joined(shape, expression_shape(value, self.seen, self.bound))
        return shape

    def bindings(self, name: str) -> tuple[tuple[cst.CSTNode, Optional[int], ValueShape], ...]:
        """Each binding of `name` (a name or `self.x`) in the module: what it
        binds, and at which position of an unpacking target (`out, h = gru(x, h)`:
        the second element of what the GRU returns)."""
        out = []
        for value, index in bindings(self.module, name):
            if value is None:
                continue
            shape = self.of(value)
            if index is not None:
                elements = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
                if elements is not None:
                    shape = self.of(elements[index].value) if index < len(elements) else ValueShape.OTHER
                else:
                    shape = shape.element(index)
            out.append((value, index, shape))
        return tuple(out)

    @property
    def conditional(self) -> dict[str, list[cst.BaseExpression]]:
        """Each name or attribute path assigned a conditional expression, indexed once per module."""
        if self._conditional is None:
            self._conditional = {}
            for node in walk_statements(self.module.body):
                if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(
                        node.value, (cst.IfExp, cst.BooleanOperation)):
                    for target in (node.targets if isinstance(node, cst.Assign) else (node,)):
                        key = dotted_name(target.target)
                        if key is not None:
                            self._conditional.setdefault(key, []).append(node.value)
        return self._conditional


def accumulated_value(hazard: AccumulationHazard) -> Optional[cst.BaseExpression]:
    """The expression added to the total: `total += v`, `total = total + v`,
    `xs.append(v)`, `total.add_(v)`."""
    statement = hazard.accumulator
    if isinstance(statement, cst.AugAssign) and isinstance(statement.operator, cst.AddAssign):
        return statement.value
    if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.BinaryOperation):
        value = statement.value
        target = statement.targets[0].target
        if isinstance(value.operator, cst.Add):
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                if mine.deep_equals(target):
                    return other
    if isinstance(statement, cst.Call) and callee_name(statement) == "append" and len(statement.args) == 1:
        return statement.args[0].value
    if (isinstance(statement, cst.Call) and callee_name(statement) in IN_PLACE_ADDERS and statement.args
            and statement.args[0].keyword is None and statement.args[0].star == ""):
        return statement.args[0].value  # `total.add_(v)`, `total.add_(v, alpha=0.5)`
    return None


def accumulated_total(statement: cst.CSTNode) -> cst.CSTNode:
    """The total an accumulating statement adds into (`total_loss` of
    `total_loss += ...`, `= total_loss + ...`, `losses.append(...)`): for a
    statement of another file, whose hazard's target `anchors` moved here."""
    if isinstance(statement, cst.AugAssign):
        return statement.target
    if isinstance(statement, cst.Assign):
        return statement.targets[0].target
    if isinstance(statement, cst.Call) and isinstance(statement.func, cst.Attribute):
        return statement.func.value
    return statement
