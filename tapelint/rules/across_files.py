"""One hazard, one finding, across the files of one run.

A file's analysis runs the functions of other modules it calls, and reports
a hazard found in them at its own call (`analysis.anchors`), with the real
places as related locations in the other file. When the whole hazard is in
that other file (its value, its backwards, its step: a trainer method's
`fisher_loss.backward(retain_graph=True)` then `loss.backward()`), and that
file is linted in the same run and reports the same hazard at those places,
the caller's copy says nothing more: only the other file's finding is kept,
where the user acts. A hazard the other file's own analysis cannot see (the
model comes from the caller) keeps its report at the call; when several
files call into the same hazard (a library's `train()` run by the script
and by five tests), it is reported once, at the first of those calls in
path order, and the other calls are related locations of that finding.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Optional

from tapelint.diagnostics import Diagnostic, FileResult, Range, Related, Role

_Place = tuple[Role, str, Range]


def without_callee_copies(results: Sequence[FileResult]) -> tuple[FileResult, ...]:
    """`results` without the findings that another file of the run reports
    itself, and with one finding for the calls of several files into one hazard."""
    reported: dict[tuple[str, str], list[frozenset[_Place]]] = {}
    for result in results:
        for diagnostic in result.diagnostics:
            key = (diagnostic.code, os.path.abspath(diagnostic.path))
            reported.setdefault(key, []).append(frozenset(_places(diagnostic) + _primary(diagnostic)))
    kept = [_kept(result, reported) for result in results]
    return _one_per_callee_hazard(kept)


def _kept(result: FileResult, reported: dict[tuple[str, str], list[frozenset[_Place]]]) -> FileResult:
    kept = tuple(d for d in result.diagnostics if not _reported_elsewhere(d, reported))
    return result if len(kept) == len(result.diagnostics) else replace(result, diagnostics=kept)


def _one_per_callee_hazard(results: list[FileResult]) -> tuple[FileResult, ...]:
    """The copies of one hazard of another file, reported at calls in several
    files, as one finding: the first call in path order keeps it, with each
    other call as a related location."""
    copies: dict[tuple[str, frozenset[_Place]], list[Diagnostic]] = {}
    for result in results:
        for diagnostic in result.diagnostics:
            key = _callee_hazard(diagnostic)
            if key is not None:
                copies.setdefault(key, []).append(diagnostic)
    merged: dict[int, Diagnostic] = {}
    dropped: set[int] = set()
    for group in copies.values():
        if len({os.path.abspath(d.path) for d in group}) < 2:
            continue  # one file's calls: its own analysis already gave one finding each
        first, *others = sorted(group, key=lambda d: (os.path.abspath(d.path), d.sort_key))
        also = tuple(Related(_call_role(other), other.path, other.range,
                             "the same hazard, reached through this call too") for other in others)
        merged[id(first)] = replace(first, related=first.related + also)
        dropped.update(id(other) for other in others)
    if not merged:
        return tuple(results)
    return tuple(replace(result, diagnostics=tuple(merged.get(id(d), d) for d in result.diagnostics
                                                   if id(d) not in dropped))
                 for result in results)


def _callee_hazard(diagnostic: Diagnostic) -> Optional[tuple[str, frozenset[_Place]]]:
    """For a finding placed at a call here whose every part is in one other
    file: its code and those parts, the same for each caller's copy."""
    here = os.path.abspath(diagnostic.path)
    places = _places(diagnostic)
    foreign = frozenset(p for p in places if p[1] != here)
    if len({p[1] for p in foreign}) != 1 or not {p[0] for p in places if p[1] == here} <= {p[0] for p in foreign}:
        return None
    return diagnostic.code, foreign


def _call_role(diagnostic: Diagnostic) -> Role:
    """The role of a copy's own call: the related location of its file at its primary range."""
    here = os.path.abspath(diagnostic.path)
    own = (r.role for r in diagnostic.related if os.path.abspath(r.path) == here and r.range == diagnostic.range)
    return next(own, Role.FAILS_AT)


def _reported_elsewhere(diagnostic: Diagnostic, reported: dict[tuple[str, str], list[frozenset[_Place]]]) -> bool:
    """Is every part of `diagnostic` really in one other file (each role it
    shows at a call here is also given there), and does that file report a
    finding of the same code at all those places?"""
    found = _callee_hazard(diagnostic)
    if found is None:
        return False
    _, foreign = found
    [path] = {p[1] for p in foreign}
    # The walks and steps say which hazard it is; the value each analysis
    # names may be another node of the same shared graph (`values` or the
    # expression it came from), so a definition only needs to be there.
    walks = {p for p in foreign if p[0] is not Role.DEFINITION}
    return bool(walks) and any(walks <= other and Role.DEFINITION in {p[0] for p in other}
                               for other in reported.get((diagnostic.code, path), ()))


# The role of each code's primary range (docs/rules.md): a caller's copy shows
# that part (TL003's accumulating statement) as a related location in the file.
_PRIMARY_ROLE = {"TL001": Role.DEFINITION, "TL005": Role.DEFINITION, "TL002": Role.FAILS_AT,
                 "TL004": Role.FAILS_AT, "TL003": Role.ACCUMULATOR, "TL007": Role.FAILS_AT}


def _primary(diagnostic: Diagnostic) -> list[_Place]:
    role = _PRIMARY_ROLE.get(diagnostic.code)
    return [] if role is None else [(role, os.path.abspath(diagnostic.path), diagnostic.range)]


def _places(diagnostic: Diagnostic) -> list[_Place]:
    return [(r.role, os.path.abspath(r.path), r.range) for r in diagnostic.related]
