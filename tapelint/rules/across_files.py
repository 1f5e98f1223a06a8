"""One hazard, one finding, across the files of one run.

A file's analysis runs the functions of other modules it calls, and reports
a hazard found in them at its own call (`analysis.anchors`), with the real
places as related locations in the other file. When the whole hazard is in
that other file (its value, its backwards, its step: a trainer method's
`fisher_loss.backward(retain_graph=True)` then `loss.backward()`), and that
file is linted in the same run and reports the same hazard at those places,
the caller's copy says nothing more: only the other file's finding is kept,
where the user acts. A hazard the other file's own analysis cannot see (the
model comes from the caller) keeps its report at the call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from tapelint.diagnostics import Diagnostic, FileResult, Range, Role

_Place = tuple[Role, str, Range]


def without_callee_copies(results: Sequence[FileResult]) -> tuple[FileResult, ...]:
    """`results` without the findings that another file of the run reports itself."""
    reported: dict[tuple[str, str], list[frozenset[_Place]]] = {}
    for result in results:
        for diagnostic in result.diagnostics:
            key = (diagnostic.code, os.path.abspath(diagnostic.path))
            reported.setdefault(key, []).append(frozenset(_places(diagnostic)))
    return tuple(_kept(result, reported) for result in results)


def _kept(result: FileResult, reported: dict[tuple[str, str], list[frozenset[_Place]]]) -> FileResult:
    kept = tuple(d for d in result.diagnostics if not _reported_elsewhere(d, reported))
    return result if len(kept) == len(result.diagnostics) else replace(result, diagnostics=kept)


def _reported_elsewhere(diagnostic: Diagnostic, reported: dict[tuple[str, str], list[frozenset[_Place]]]) -> bool:
    """Is every part of `diagnostic` really in one other file (each role it
    shows at a call here is also given there), and does that file report a
    finding of the same code at all those places?"""
    here = os.path.abspath(diagnostic.path)
    places = _places(diagnostic)
    foreign = {p for p in places if p[1] != here}
    paths = {p[1] for p in foreign}
    if len(paths) != 1 or not {p[0] for p in places if p[1] == here} <= {p[0] for p in foreign}:
        return False
    # The walks and steps say which hazard it is; the value each analysis
    # names may be another node of the same shared graph (`values` or the
    # expression it came from), so a definition only needs to be there.
    walks = {p for p in foreign if p[0] is not Role.DEFINITION}
    return bool(walks) and any(walks <= other and Role.DEFINITION in {p[0] for p in other}
                               for other in reported.get((diagnostic.code, paths.pop()), ()))


def _places(diagnostic: Diagnostic) -> list[_Place]:
    return [(r.role, os.path.abspath(r.path), r.range) for r in diagnostic.related]
