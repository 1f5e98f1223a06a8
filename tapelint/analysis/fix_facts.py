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

from tapelint.analysis.anchors import Located
from tapelint.analysis.findings import AccumulationHazard, Hazard, HoistedHazard, SharedHazard
from tapelint.analysis.shapes import ValueShape, expression_shape
from tapelint.analysis.torch_api import callee_name
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
                bound: Mapping[str, ValueShape]) -> list[Located]:
    """Each hazard with the shape of the expression its fixes would edit
    (placed in the linted module: after `anchors.relocate`)."""
    out = []
    for item in found:
        hazard = item.hazard
        if isinstance(hazard, HoistedHazard):
            hazard = replace(hazard, definition_shape=_shape(hazard.definition, seen, bound))
        elif isinstance(hazard, AccumulationHazard):
            hazard = _with_value_shape(hazard, seen, bound)
        elif isinstance(hazard, SharedHazard):
            sample = bound.get(hazard.value, ValueShape.OTHER) if hazard.value.isidentifier() else ValueShape.OTHER
            if _shape(hazard.definition, seen, bound) is not ValueShape.TENSOR:
                sample = ValueShape.OTHER
            hazard = replace(hazard, sample_shape=sample)
        out.append(item if hazard is item.hazard else replace(item, hazard=hazard))
    return out


def _with_value_shape(hazard: AccumulationHazard, seen: Mapping[cst.CSTNode, ValueShape],
                      bound: Mapping[str, ValueShape]) -> AccumulationHazard:
    """The hazard and the other statements adding into its total (`also`), each
    with the shape of what it adds: a merged fix edits every one of them."""
    also = tuple(_with_value_shape(other, seen, bound) for other in hazard.also)
    return replace(hazard, value_shape=_shape(accumulated_value(hazard), seen, bound), also=also)


def _shape(expr: Optional[cst.CSTNode], seen: Mapping[cst.CSTNode, ValueShape],
           bound: Mapping[str, ValueShape]) -> ValueShape:
    if not isinstance(expr, cst.BaseExpression):
        return ValueShape.OTHER
    return expression_shape(expr, seen, bound)


def accumulated_value(hazard: AccumulationHazard) -> Optional[cst.BaseExpression]:
    """The expression added to the total: `total += v`, `total = total + v`, `xs.append(v)`."""
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
    return None
