"""Lint the installed torch package and compare with libcst's bare parse.

    python benchmarks/bench_torch.py [--limit N] [--jobs N]

Both runs use the same parallelism: `--jobs` worker processes, one task per
file, each task reading and decoding the file first. The lint run is
exactly what `tapelint check` does (`tapelint.runner.lint_files`, pre-check
on); the bare run is `bare_parse.py`'s (only `libcst.parse_module` on the text). Files are
read once before timing, so neither run pays for a cold disk cache.

Printed: files, lines, files skipped by the pre-check, wall time of each
run, the ratios (whole tree; and the analysed files alone against their own
bare parse), peak RSS of the lint run, findings by code, and errors.
Not a test: it takes minutes on the whole package.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence
from fnmatch import fnmatch

from bare_parse import count_lines, time_bare
from corpus import torch_root

from tapelint.files import discover
from tapelint.runner import RunResult, default_jobs, lint_files
from tapelint.settings import Settings


def time_lint(files: Sequence[str], jobs: int) -> tuple[float, RunResult]:
    start = time.perf_counter()
    run = lint_files(files, Settings(), jobs)
    return time.perf_counter() - start, run


def peak_rss_mb() -> tuple[float, float]:
    """(this process, largest worker) peak RSS in MB; Linux reports KiB."""
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / (1024 * 1024)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    return own, worker


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="only the first N files (sorted)")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="worker processes for both runs")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave matching files (relative to the torch folder) out of both runs")
    args = parser.parse_args(argv)

    root = torch_root()
    if root is None:
        sys.exit("torch is not installed")
    excluded_globs = tuple(args.exclude)
    every = discover([root]).files
    files = [f for f in every if not any(fnmatch(os.path.relpath(f, root), g) for g in excluded_globs)][: args.limit]
    for path in sorted(set(every) - set(files))[:10] if args.limit is None else ():
        print(f"left out of both runs: {os.path.relpath(path, root)}")
    lines = count_lines(files)  # also warms the page cache for both runs
    print(f"torch at {root}")
    print(f"files: {len(files)}   lines: {lines:,}   jobs: {args.jobs} (both runs)")

    # The lint run goes first, so the children's peak RSS is the lint workers'.
    lint_seconds, run = time_lint(files, args.jobs)
    own_mb, worker_mb = peak_rss_mb()
    bare_seconds, rejected, note = time_bare(files, args.jobs)

    analysed = [o.result.path for o in run.outcomes if not o.result.skipped and not o.result.errors]
    skipped = sum(1 for o in run.outcomes if o.result.skipped)
    print(f"skipped by the pre-check: {skipped}   analysed: {len(analysed)}")
    print(f"lint, whole tree:       {lint_seconds:8.2f} s")
    print(f"bare parse, whole tree: {bare_seconds:8.2f} s{note}   (libcst rejected {rejected} files)")
    print(f"ratio whole tree:       {lint_seconds / bare_seconds:8.2f} x   (target <= 1.0)")
    if skipped:
        analysed_lint, _ = time_lint(analysed, args.jobs)
        analysed_bare, _, note = time_bare(analysed, args.jobs)
        print(f"lint, analysed files:   {analysed_lint:8.2f} s")
        print(f"bare, analysed files:   {analysed_bare:8.2f} s{note}")
        print(f"ratio analysed files:   {analysed_lint / analysed_bare:8.2f} x   (target <= 1.5)")
    else:
        print("ratio analysed files:   same as whole tree (nothing skipped)")
    print(
        f"peak RSS of the lint run: largest worker {worker_mb:.0f} MB, main process {own_mb:.0f} MB"
        f"   (target <= 300 per process; all {args.jobs} workers at their peak at once"
        f" would be at most {own_mb + args.jobs * worker_mb:.0f} MB in all)"
    )
    findings = Counter(d.code for o in run.outcomes for d in o.result.diagnostics)
    print("findings: " + (", ".join(f"{code} {n}" for code, n in sorted(findings.items())) or "none"))
    errors = [e for o in run.outcomes for e in o.result.errors]
    print(f"errors: {len(errors)}   internal errors: {sum(1 for o in run.outcomes if o.crashed)}")
    for error in errors[:20]:
        print(f"  {os.path.relpath(error.path, root)}: {error.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
