"""Crash sweep (issue 10): lint installed packages and generated programs,
print how many files, internal errors, budget hits and seconds.

    nice -n 10 python benchmarks/crash_sweep.py --programs 5000 --jobs 1 \\
        [--tree /path/to/site-packages ...]

Trees are linted by `tapelint check --format json` in a subprocess (exactly
what a user runs); generated programs (`tests/program_generator.py`, one in
ten a notebook) are written to a temporary directory and linted the same
way, then every internal error is printed. Exit 1 if there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from program_generator import ProgramGenerator  # noqa: E402


def check(paths: list[str], jobs: int) -> tuple[dict, float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--isolated", "--format", "json", "-j", str(jobs), *paths],
        capture_output=True, text=True,
    )
    elapsed = time.monotonic() - start
    if done.returncode not in (0, 1, 2) or not done.stdout.strip():
        raise SystemExit(f"tapelint check failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout), elapsed


def summarise(label: str, document: dict, elapsed: float) -> int:
    errors = document["errors"]
    internal = [e for e in errors if e["message"].startswith("internal error")]
    budget = [e for e in errors if "per-file" in e["message"]]
    tl900 = sum(1 for d in document["diagnostics"] if d["code"] == "TL900")
    print(f"{label}: {document['files_checked']} files, {len(document['diagnostics'])} diagnostics "
          f"({tl900} TL900), {len(errors)} file errors, {len(budget)} over the per-file budget, "
          f"{len(internal)} internal errors, {elapsed:.0f} s")
    for error in internal + budget:
        print(f"  {error['path']}: {error['message']}")
    return len(internal)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="a directory to lint (repeatable)")
    parser.add_argument("--programs", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    internal = 0
    for tree in args.tree:
        document, elapsed = check([tree], args.jobs)
        internal += summarise(tree, document, elapsed)
    if args.programs:
        generator = ProgramGenerator(args.seed)
        with tempfile.TemporaryDirectory(prefix="tapelint-sweep-") as directory:
            for index in range(args.programs):
                notebook = index % 10 == 9
                name = f"g{index:05d}.ipynb" if notebook else f"g{index:05d}.py"
                with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                    handle.write(generator.notebook() if notebook else generator.program())
            document, elapsed = check([directory], args.jobs)
            internal += summarise(f"{args.programs} generated programs (seed {args.seed})", document, elapsed)
    return 1 if internal else 0


if __name__ == "__main__":
    sys.exit(main())
