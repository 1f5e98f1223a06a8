"""Detach a value where it is created (TL001): `expr` -> `expr.detach()`."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.findings import HoistedHazard
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, method_call_text
from tapelint.fixes.reach import created_in_callee, reaches_leaf_without


@builder
def definition_detach_edits(hazard: HoistedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`.detach()` on the expression that creates the value (parenthesised
    when needed). No edit when the expression may be something other than a
    tensor (the analysis's `definition_shape`), when a backward would then reach no trainable leaf (the value is
    its root, or its only way to one), or when the value is created inside a
    function the loop's code calls (`Net.forward`: the edit would change
    every caller) other than an `__init__` caching it."""
    definition = hazard.definition
    if not hazard.definition_shape.tensor:
        return ()
    events = (hazard.first_backward, hazard.fails_at)
    if any(not reaches_leaf_without(e, definition) for e in events):
        return ()
    if created_in_callee(hazard.fails_at, definition) and not _cached_in_init(ctx, definition):
        return ()
    return (Edit(ctx.range_of(definition), method_call_text(ctx, definition, "detach")),)


def _cached_in_init(ctx: SourceContext, definition: cst.CSTNode) -> bool:
    function = ctx.names.ancestor(definition, (cst.FunctionDef,))
    return isinstance(function, cst.FunctionDef) and function.name.value == "__init__"
