"""Two runs at the same time, one core each: the comparison this shared machine keeps honest.

    python benchmarks/paired.py --against OTHER_PYTHON [--rounds 2] [--projects NAME ...] [--dest DIR]
    python benchmarks/paired.py --bare [--rounds 2] [--projects NAME ...] [--dest DIR]

Back-to-back runs on a shared 2-core machine move by a fifth with its load,
as much as a change worth measuring. Here two runs start together, each
with `--jobs 1`, and see the same machine: this Python's `tapelint check
--no-cache` (cold, torch semantics, notebooks excluded, as `corpus_run.py`
runs it) over issue 12's eight repositories (or `--projects`), and either
the same command run by `--against`'s Python (another build: an environment
of the main branch, or the compiled build) or `bare_parse.py` over the same
files (`--bare`). Each process tree's CPU-seconds come from `os.wait4` (the
process and the workers it waited for), wall time beside them. Printed per
round, then the range of the ratio (this run / the other).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence

from corpus import corpus_dest, projects, python_files
from corpus_run import bare_command, build_kind, check_command, file_listing, load


def tapelint(python: str, folders: Sequence[str]) -> list[str]:
    return check_command([python, "-m", "tapelint"], "torch", 1, folders)


def together(commands: Sequence[Sequence[str]]) -> list[tuple[float, float, int]]:
    """Start `commands` at once (niced, output dropped); each one's wall
    seconds, CPU-seconds of its process tree, and exit code."""
    started = time.perf_counter()
    running = {subprocess.Popen(["nice", "-n", "10", *command], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).pid: index for index, command in enumerate(commands)}
    results: list[tuple[float, float, int]] = [(0.0, 0.0, 0)] * len(commands)
    while running:
        pid, status, usage = os.wait4(-1, 0)
        if pid in running:
            results[running.pop(pid)] = (time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
                                         os.waitstatus_to_exitcode(status))
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    other = parser.add_mutually_exclusive_group(required=True)
    other.add_argument("--against", metavar="PYTHON", help="the Python of the other build's environment")
    other.add_argument("--bare", action="store_true", help="against libcst's bare parse of the same files")
    parser.add_argument("--dest", help="corpus folder (as for corpus.py)")
    parser.add_argument("--projects", nargs="+", metavar="NAME", help="these projects, not issue 12's eight")
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs (default 2)")
    args = parser.parse_args(argv)
    dest = os.path.abspath(corpus_dest(args.dest))
    chosen = [p for p in projects(dest) if (p.name in args.projects if args.projects else p.issue12)]
    if not chosen or (args.projects and len(chosen) != len(set(args.projects))):
        sys.exit(f"error: projects not in the corpus at {dest} (run corpus.py)")
    folders = [p.path for p in chosen]
    mine = tapelint(sys.executable, folders)
    with file_listing([path for folder in folders for path in python_files(folder)]) as listing:
        if args.bare:
            theirs, label = bare_command(listing, 1), "bare libcst parse"
        else:
            theirs, label = tapelint(args.against, folders), f"{args.against}: tapelint {build_kind(args.against)}"
        print(f"this: {sys.executable}: tapelint {build_kind()}; other: {label}")
        print(f"projects: {', '.join(p.name for p in chosen)}; load average before: {load()}")
        ratios = []
        for round_ in range(1, args.rounds + 1):
            (wall, cpu, code), (other_wall, other_cpu, other_code) = together([mine, theirs])
            if code not in (0, 1) or other_code not in (0, 1):
                sys.exit(f"error: round {round_}: exit codes {code} and {other_code}")
            ratios.append(cpu / other_cpu)
            print(f"round {round_}: this {cpu:6.1f} s CPU ({wall:5.1f} s wall), other {other_cpu:6.1f} s CPU"
                  f" ({other_wall:5.1f} s wall): {ratios[-1]:.2f}x CPU")
    print(f"CPU ratio this/other: {min(ratios):.2f}x to {max(ratios):.2f}x; load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
