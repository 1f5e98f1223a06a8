"""`--statistics`: how many diagnostics each rule reported, instead of the
diagnostics themselves (ruff's `--statistics`).

    2	TL003	[*] tracked-accumulation
    1	TL001	[ ] hoisted-tracked-tensor

Most frequent first, then by code; `[*]` marks a rule whose diagnostics all
carry a safe fix that `--fix` applies. `--format json` prints the same rows
as a list of objects.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TextIO

from tapelint.diagnostics import Diagnostic, Safety


@dataclass(frozen=True)
class Statistic:
    code: str
    name: str
    count: int
    fixable: bool  # every one of them has a safe fix with edits


def statistics(diagnostics: Iterable[Diagnostic]) -> list[Statistic]:
    diagnostics = list(diagnostics)
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {code: all(_safely_fixable(d) for d in diagnostics if d.code == code) for code in counts}
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [Statistic(code, names[code], counts[code], fixable[code]) for code in ordered]


def _safely_fixable(diagnostic: Diagnostic) -> bool:
    return any(fix.safety is Safety.SAFE and fix.edits for fix in diagnostic.fixes)


def write_statistics(diagnostics: Iterable[Diagnostic], output_format: str, out: TextIO) -> None:
    rows = statistics(diagnostics)
    if output_format == "json":
        json.dump([asdict(row) for row in rows], out, indent=2)
        out.write("\n")
        return
    width = max((len(str(row.count)) for row in rows), default=1)
    for row in rows:
        out.write(f"{row.count:>{width}}\t{row.code}\t{'[*]' if row.fixable else '[ ]'} {row.name}\n")
