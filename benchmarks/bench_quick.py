"""The quick tree (`tapelint/analysis/quick_tree.py`) against libcst's parse
on real projects, two ways:

- trees: every `.py` file of each project built both ways and compared
  field by field (`quick_tree.semantic_difference`), with the CPU of each;
- lints: `tapelint check --format json` with `TAPELINT_QUICK=0` and with it
  on, under both semantics, diagnostics compared in full (as
  `bench_thin.py` does for the thin parse), with each run's CPU-seconds.

    python benchmarks/bench_quick.py [--projects diffusers detectron2 ...] [--jobs 2] [--trees-only]

Not a test: a project takes minutes. Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench_thin import chosen, compare

from tapelint.analysis.parsing import parse_module
from tapelint.analysis.quick_tree import Unsupported, quick_module, semantic_difference

DEFAULT_PROJECTS = ("examples", "nanoGPT", "pytorch-lightning", "detectron2", "diffusers", "stylegan2-ada-pytorch",
                    "learn2learn", "higher")


def compare_trees(root: str) -> tuple[Counter, list[str], float, float]:
    """Per outcome, how many files; the first differences; the CPU-seconds
    of libcst's parse and of the quick tree."""
    outcomes: Counter = Counter()
    differences: list[str] = []
    libcst_cpu = quick_cpu = 0.0
    for path in sorted(Path(root).rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8").removeprefix("\ufeff")  # as `lint_source` reads it
            started = time.process_time()
            real = parse_module(text)
            libcst_cpu += time.process_time() - started
        except Exception:  # noqa: BLE001 - a file libcst refuses is not compared
            outcomes["not parsed by libcst"] += 1
            continue
        started = time.process_time()
        try:
            quick = quick_module(text)
        except Unsupported as exc:
            outcomes[f"not built ({exc})"] += 1
            continue
        except SyntaxError:
            outcomes["refused by CPython"] += 1
            continue
        finally:
            quick_cpu += time.process_time() - started
        found = semantic_difference(quick, real)
        outcomes["identical" if found is None else "DIFFERENT"] += 1
        if found is not None and len(differences) < 10:
            differences.append(f"{path}: {found}")
    return outcomes, differences, libcst_cpu, quick_cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", help="corpus folder (as for corpus.py)")
    parser.add_argument("--projects", nargs="+", default=list(DEFAULT_PROJECTS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trees-only", action="store_true", help="compare the trees, not the lints")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # libcst's parse of deep expressions
    differing = 0
    for name, path in chosen(args.dest, args.projects):
        if path is None:
            differing += 1
            continue
        outcomes, differences, libcst_cpu, quick_cpu = compare_trees(path)
        differing += outcomes["DIFFERENT"] > 0
        shown = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
        print(f"{name:22} trees: {shown}   CPU libcst {libcst_cpu:5.1f} s  quick {quick_cpu:5.1f} s"
              f"  ({quick_cpu / libcst_cpu if libcst_cpu else 0:.2f}x)", flush=True)
        for line in differences:
            print(f"    {line[:400]}", flush=True)
        if args.trees_only:
            continue
        differing += compare(name, path, args.jobs, "TAPELINT_QUICK", ("libcst", "quick"))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
