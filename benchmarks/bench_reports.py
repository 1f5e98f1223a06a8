"""Recall and precision on real bug reports: the programs of
`benchmarks/reports/`, each a public thread (GitHub issue, forum question)
where someone hit a hazard, rewritten as a small program with a fixture
header (what a correct linter reports, and what real PyTorch and a strict
tape do: `tests/test_reports.py` holds those lines to the truth).

    python benchmarks/bench_reports.py [--verbose]

Printed, per semantics: the declared findings tapelint reports at their
line (recall), the findings it reports that no header declares (on bug
programs and on the corrected ones, `neg_`), and the programs reported
exactly as declared; then each program that is not, with its `missed:`
reason. A finding of the right rule at another line counts as missed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixture_spec import PROFILES, REPORTS_DIR, FixtureSpec, fixture_paths, parse_fixture  # noqa: E402
from tapelint.diagnostics import Semantics  # noqa: E402
from tapelint.lint import lint_source  # noqa: E402
from tapelint.settings import Settings  # noqa: E402


def reported(spec: FixtureSpec, profile: str) -> set[tuple[str, int]]:
    result = lint_source(spec.path.read_text(encoding="utf-8"), str(spec.path), Settings(semantics=Semantics(profile)))
    return {(d.code, d.range.start.line) for d in result.diagnostics}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="list every program, not only the unmatched ones")
    args = parser.parse_args(argv)
    specs = [parse_fixture(p) for p in fixture_paths(REPORTS_DIR)]
    bugs = [s for s in specs if s.expects]
    print(f"{len(specs)} programs from {len({s.source for s in specs})} threads: "
          f"{len(bugs)} with a hazard, {len(specs) - len(bugs)} corrected (neg_)")
    unmatched: dict[Path, list[str]] = {}
    print(f"{'semantics':10s} {'recall':>14s} {'false on bugs':>14s} {'false on neg_':>14s} {'exact':>10s}")
    for profile in PROFILES:
        found = declared = exact = 0
        false: Counter[bool] = Counter()
        for spec in specs:
            want = {(e.code, e.line) for e in spec.expects_under(profile)}
            got = reported(spec, profile)
            declared += len(want)
            found += len(want & got)
            false[bool(spec.expects)] += len(got - want)
            if got == want:
                exact += 1
            else:
                unmatched.setdefault(spec.path, []).append(
                    f"{profile}: declared {sorted(want)}, reported {sorted(got)}")
        recall = f"{found}/{declared} ({found / declared:.0%})" if declared else "-"
        print(f"{profile:10s} {recall:>14s} {false[True]:>14d} {false[False]:>14d} {exact:>5d}/{len(specs)}")
    for spec in specs:
        lines = unmatched.get(spec.path)
        if lines or args.verbose:
            print(f"\n{spec.path.name}  {spec.source}")
            for line in lines or ["reported as declared"]:
                print(f"  {line}")
            if spec.missed:
                print(f"  missed: {spec.missed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
