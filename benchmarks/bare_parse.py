"""The yardstick every speed figure is measured against: libcst's bare parse.

    python benchmarks/bare_parse.py --jobs N --files-from LIST

Each task reads and decodes one file exactly as tapelint does
(`tapelint.files.read_source`) and calls `libcst.parse_module` on the text;
nothing else. Used in-process by `bench_torch.py` and as a subprocess by
`corpus_run.py` (so the CPU-seconds of its whole process tree can be read
with `RUSAGE_CHILDREN`). As a script it prints one line: files, files libcst
rejected, and a note if a worker died.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import libcst as cst

from tapelint.files import SourceError, read_source


def bare_parse(path: str) -> bool:
    """Read, decode and parse one file; False when libcst rejects it."""
    try:
        cst.parse_module(read_source(path))
    except (SourceError, cst.ParserSyntaxError, RecursionError):
        return False
    return True


def time_bare(files: Sequence[str], jobs: int) -> tuple[float, int, str]:
    """Wall time of bare parsing, files libcst rejected, and a note if a
    worker died (libcst's native parser can overflow the stack)."""
    start = time.perf_counter()
    try:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            rejected = sum(1 for ok in pool.map(bare_parse, files) if not ok)
    except BrokenProcessPool:
        return time.perf_counter() - start, 0, " (a worker crashed: timing incomplete)"
    return time.perf_counter() - start, rejected, ""


def count_lines(files: Iterable[str]) -> int:
    """Newlines in the files' bytes (unreadable files count nothing)."""
    lines = 0
    for path in files:
        try:
            with open(path, "rb") as handle:
                lines += handle.read().count(b"\n")
        except OSError:
            pass
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, required=True, help="worker processes")
    parser.add_argument("--files-from", required=True, metavar="LIST", help="a file naming one path a line")
    args = parser.parse_args(argv)
    with open(args.files_from, encoding="utf-8") as handle:
        files = [line.rstrip("\n") for line in handle if line.strip()]
    _, rejected, note = time_bare(files, args.jobs)
    print(f"files: {len(files)}   rejected by libcst: {rejected}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
