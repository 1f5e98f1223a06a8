"""Accumulate a number (or a graph-free tensor) instead of the tracked value
(TL003): `.item()` or `.detach()` on what is added, each safe only when
every other use of the total allows it."""

from __future__ import annotations

from enum import Enum
from typing import Optional, cast

import libcst as cst

from tapelint.analysis.findings import AccumulationHazard
from tapelint.analysis.fix_facts import accumulated_value
from tapelint.analysis.shapes import ValueShape
from tapelint.analysis.syntax import walk_nodes
from tapelint.analysis.torch_api import (
    IN_PLACE_ADDERS,
    NUMBER_CALLS,
    REDUCING_CALLS,
    TENSOR_READS,
    callee_name,
    only_reports,
)
from tapelint.diagnostics import Edit, Fix, FixKind, Safety
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import NO_EDITS, fix_of, guarded, method_call_text


class TotalUse(str, Enum):
    """What the code does with a running total besides accumulating into it."""

    NUMERIC = "numeric"  # reported or used in arithmetic: a float works as well as a tensor
    TENSOR = "tensor"  # read as a tensor (`total.item()`), never backwarded
    OTHER = "other"  # anything else: returned, stored, iterated, passed on


def accumulation_fixes(hazard: AccumulationHazard, ctx: SourceContext, item: str, detach: str) -> tuple[Fix, ...]:
    """`.item()` and `.detach()` on the accumulated value, the safe one first
    (see TL003's "Fix safety"); `item` and `detach` describe them."""
    item_safe, detach_safe = _verdict(hazard, ctx)
    # An unsafe `.item()` would break the program, not just change it: a float
    # has no `.item()` (a total read as a tensor), a tensor of many elements has none.
    fixes = (
        fix_of(FixKind.ITEM, Safety.SAFE, item, _value_edits(hazard, ctx, "item") if item_safe else NO_EDITS),
        fix_of(FixKind.DETACH, Safety.SAFE if detach_safe else Safety.UNSAFE, detach,
               _value_edits(hazard, ctx, "detach")),
    )
    return fixes if item_safe else fixes[::-1]


@guarded((False, False))
def _verdict(hazard: AccumulationHazard, ctx: SourceContext) -> tuple[bool, bool]:
    """(`.item()` is safe, `.detach()` is safe)."""
    use = total_use(hazard, ctx)
    # `total.add_(v.item())` leaves the total the tensor it was, whatever reads it
    item_use = use is not TotalUse.OTHER if _in_place(hazard) else use is TotalUse.NUMERIC
    return item_use and scalar_like(hazard), use is not TotalUse.OTHER


@guarded(NO_EDITS)
def _value_edits(hazard: AccumulationHazard, ctx: SourceContext, method: str) -> tuple[Edit, ...]:
    value = accumulated_value(hazard)
    if value is None or _given_to_a_helper(hazard, value, ctx):
        return ()
    if method == "detach":
        # possibly a number, a dict, a list: `.detach()` exists on none of them
        return (Edit(ctx.range_of(value), method_call_text(ctx, value, method)),) if hazard.value_shape.tensor else ()
    read = _NUMBER_READS.get(hazard.value_shape)
    if read == "float":
        return (Edit(ctx.range_of(value), f"float({ctx.code_of(value)})"),)
    return (Edit(ctx.range_of(value), method_call_text(ctx, value, read)),) if read else ()


def _given_to_a_helper(hazard: AccumulationHazard, value: cst.BaseExpression, ctx: SourceContext) -> bool:
    """Is the accumulating statement in a helper outside the loop that runs
    it (a meter's `update(self, val)`), adding what the helper's parameters
    are given? Its callers may hand it numbers as well as the tracked loss
    (`meters[name].update(value)` over a dict of both), so an edit there is
    not known to work for every call."""
    function = ctx.names.ancestor(hazard.accumulator, (cst.FunctionDef,))
    if not isinstance(function, cst.FunctionDef) or ctx.names.within(hazard.loop.node, function):
        return False
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                      *function.params.kwonly_params)}
    return any(type(node) is cst.Name and node.value in params for node in walk_nodes(value))


def total_use(hazard: AccumulationHazard, ctx: SourceContext) -> TotalUse:
    """The least forgiving use of the total anywhere in the module (other than
    binding or accumulating into it). Names are matched by spelling, not by
    scope, so a same-named variable elsewhere can only make this stricter."""
    names = ctx.names
    target = hazard.accumulator_target
    is_list = isinstance(hazard.accumulator, cst.Call) and not _in_place(hazard)
    uses: list[cst.CSTNode] = []
    if isinstance(target, cst.Name):
        uses = list(names.uses(target.value))
    elif isinstance(target, cst.Attribute):
        uses = list(names.attribute_uses(target.attr.value))
    elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        base = target.value.value
        for name in names.uses(base):
            parent = names.parent(name)
            if isinstance(parent, cst.Subscript) and parent.value is name:
                if parent.deep_equals(target):
                    uses.append(parent)
                elif not _constant_key(parent):
                    return TotalUse.OTHER  # `metrics[k]` might be the total
            elif names.is_binding(name):
                continue
            elif _use_kind(ctx, name, as_list=True) is not TotalUse.NUMERIC:
                return TotalUse.OTHER  # the whole dict, other than printed
    else:
        return TotalUse.OTHER
    kinds = {
        _use_kind(ctx, use, as_list=is_list)
        for use in uses
        if not names.within(use, hazard.accumulator) and not names.is_binding(use)
    }
    for kind in (TotalUse.OTHER, TotalUse.TENSOR):
        if kind in kinds:
            return kind
    return TotalUse.NUMERIC


def _in_place(hazard: AccumulationHazard) -> bool:
    """Is the total a tensor added into in place (`total.add_(v)`)?"""
    return isinstance(hazard.accumulator, cst.Call) and callee_name(hazard.accumulator) in IN_PLACE_ADDERS


def _constant_key(subscript: cst.Subscript) -> bool:
    return len(subscript.slice) == 1 and isinstance(
        getattr(subscript.slice[0].slice, "value", None), (cst.SimpleString, cst.Integer)
    )


def _use_kind(ctx: SourceContext, node: cst.CSTNode, as_list: bool) -> TotalUse:
    """Follow one read of the total up through the expressions that keep it a number."""
    names = ctx.names
    while True:
        parent = names.parent(node)
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)) and not as_list:
            node = parent
        elif isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression)):
            return TotalUse.NUMERIC
        elif isinstance(parent, cst.Subscript) and parent.value is node and as_list:
            node, as_list = parent, False  # an element of the list
        elif isinstance(parent, cst.Attribute) and parent.value is node:
            call = names.parent(parent)
            reads = isinstance(call, cst.Call) and call.func is parent and not call.args
            return TotalUse.TENSOR if reads and parent.attr.value in TENSOR_READS and not as_list else TotalUse.OTHER
        elif isinstance(parent, cst.Arg) and parent.keyword is None:
            call = names.parent(parent)
            if not isinstance(call, cst.Call):
                return TotalUse.OTHER
            if only_reports(call):
                return TotalUse.NUMERIC
            if callee_name(call) in (REDUCING_CALLS if as_list else NUMBER_CALLS):
                node, as_list = call, False
            else:
                return TotalUse.OTHER
        else:
            return TotalUse.OTHER


@guarded(cast(Optional[str], None))
def number_read(hazard: AccumulationHazard, ctx: SourceContext) -> Optional[str]:
    """The accumulated value read out as a number, as the fix writes it
    (`float(term)` for `term = loss if c else 0.0`, else `loss.item()`), for
    the message to quote what the edit does; None when the fix has no edit."""
    edits = _value_edits(hazard, ctx, "item")
    return edits[0].new_text if edits else None


def scalar_like(hazard: AccumulationHazard) -> bool:
    """Is the accumulated value known to hold one element, so that reading it
    out as a number works (the analysis's `value_shape`: a full reduction, a
    reducing loss function or `nn.*Loss` module, arithmetic on those; or such
    a tensor or a number, for which `float(v)` works)? Every statement adding
    into the total must be: the fix edits each."""
    return all(h.value_shape in _NUMBER_READS for h in (hazard, *hazard.also))


# How a value of each shape is read out as a number (`.item()`: a tensor of one
# element; `float(v)`: that or a Python number, as `loss if c else 0.0` is).
_NUMBER_READS = {ValueShape.SCALAR: "item", ValueShape.SCALAR_OR_NUMBER: "float"}
