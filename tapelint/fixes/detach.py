"""Detach a value where it is created (TL001): `expr` -> `expr.detach()`."""

from __future__ import annotations

from tapelint.analysis.findings import HoistedHazard
from tapelint.diagnostics import Edit
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import builder, method_call_text


@builder
def definition_detach_edits(hazard: HoistedHazard, ctx: SourceContext) -> tuple[Edit, ...]:
    """`.detach()` on the expression that creates the value (parenthesised when needed)."""
    return (Edit(ctx.range_of(hazard.definition), method_call_text(ctx, hazard.definition, "detach")),)
