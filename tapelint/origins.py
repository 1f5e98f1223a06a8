"""Related locations in other files: where the parts of a hazard that the
analysis placed at a call of the linted file really are (`analysis.anchors`).

Each gets the other file's own path — shown as the linted path is (relative
stays relative) — and its position in that file's tree. Positions cost a
code generation pass over the whole tree, so each module's are computed
once per lint (`Positions`), however many findings point into it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

import libcst as cst
from libcst.metadata import CodeRange

from tapelint.analysis.anchors import Origin
from tapelint.diagnostics import Diagnostic, Range, Related, Role
from tapelint.positions import module_positions

_WHAT = {
    Role.DEFINITION: "created inside",
    Role.FIRST_BACKWARD: "the earlier backward (it frees or, with retain_graph=True, keeps the graph) runs inside",
    Role.FAILS_AT: "the backward that fails runs inside",
    Role.ACCUMULATOR: "accumulated inside",
    Role.STEP: "the step runs inside",
}


# Each module's node positions, for one lint.
Positions = dict[cst.Module, Mapping[cst.CSTNode, CodeRange]]


def positions_in(module: cst.Module, known: Positions) -> Mapping[cst.CSTNode, CodeRange]:
    """The positions of `module`'s nodes, computed on first use and kept in `known`."""
    found = known.get(module)
    if found is None:
        found = known[module] = module_positions(module)
    return found


def with_origins(diagnostic: Diagnostic, origins: Sequence[Origin], linted_path: str,
                 positions: Positions) -> Diagnostic:
    if not origins:
        return diagnostic
    related = list(diagnostic.related)
    for origin in origins:
        position = positions_in(origin.module, positions)[origin.node]
        where = Range.of(position.start.line, position.start.column, position.end.line, position.end.column)
        shown = origin.path if os.path.isabs(linted_path) else os.path.relpath(origin.path)
        message = (f"{_WHAT[origin.role]} `{origin.function}`, {os.path.basename(origin.path)} "
                   f"line {where.start.line}")
        related.append(Related(origin.role, shown, where, message))
    return replace(diagnostic, related=tuple(related))
