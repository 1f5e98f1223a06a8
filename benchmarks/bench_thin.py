"""The thin parse (`tapelint/analysis/thin.py`) against the whole parse on
real projects: the same `tapelint check --format json` run with
`TAPELINT_THIN=0` and with it on, under both semantics, and the diagnostics
of both compared in full (messages, ranges, related locations, fixes), plus
each run's CPU-seconds of the whole process tree.

    python benchmarks/bench_thin.py [--projects peft trl ...] [--jobs 2] [--dest DIR]

Prints one line per project and semantics: identical or the differences,
and the CPU both ways. Not a test: a project takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from corpus import corpus_dest, projects
from corpus_run import Timed, tapelint_command, timed

DEFAULT_PROJECTS = ("peft", "trl", "PyTorch-GAN", "pytorch-lightning", "stable-baselines3")


def check(path: str, semantics: str, jobs: int, thin: bool) -> tuple[Timed, list[str], list[str]]:
    """One run: its timing, each diagnostic as canonical JSON, each error."""
    env = dict(os.environ, TAPELINT_THIN="1" if thin else "0")
    command = [*tapelint_command(), "check", "--no-cache", "--format", "json", "--semantics", semantics,
               "--jobs", str(jobs), "--exclude", "*.ipynb", path]
    run = timed(command, env=env)
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        return run, [], [f"exit {run.returncode} without a report: {run.stderr.strip()[-300:]}"]
    diagnostics = [json.dumps(d, sort_keys=True) for d in report["diagnostics"]]
    errors = [json.dumps(e, sort_keys=True) for e in report.get("errors", ())]
    return run, diagnostics, errors


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", help="corpus folder (as for corpus.py)")
    parser.add_argument("--projects", nargs="+", default=list(DEFAULT_PROJECTS))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    present = {p.name: p for p in projects(corpus_dest(args.dest))}
    differing = 0
    for name in args.projects:
        project = present.get(name)
        if project is None:
            print(f"{name}: not in the corpus", flush=True)
            differing += 1
            continue
        for semantics in ("torch", "strict"):
            whole, whole_found, whole_errors = check(project.path, semantics, args.jobs, thin=False)
            thin, thin_found, thin_errors = check(project.path, semantics, args.jobs, thin=True)
            same = whole_found == thin_found and whole_errors == thin_errors
            differing += not same
            print(f"{name:22} {semantics:6} {len(whole_found):3} diagnostics {len(whole_errors):2} errors"
                  f"  {'identical' if same else 'DIFFERENT'}   CPU whole {whole.cpu:6.1f} s  thin {thin.cpu:6.1f} s",
                  flush=True)
            for line in sorted(set(whole_found + whole_errors) ^ set(thin_found + thin_errors)):
                side = "whole only" if line in whole_found + whole_errors else "thin only"
                print(f"    {side}: {line[:400]}", flush=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
