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
from collections.abc import Iterator, Sequence

from corpus import corpus_dest, projects
from corpus_run import Timed, tapelint_command, timed

DEFAULT_PROJECTS = ("peft", "trl", "PyTorch-GAN", "pytorch-lightning", "stable-baselines3")


def check(path: str, semantics: str, jobs: int, thin: bool, switch: str = "TAPELINT_THIN"
          ) -> tuple[Timed, list[str], list[str]]:
    """One run, with `switch` (the environment variable of a fast path) on
    or off: its timing, each diagnostic as canonical JSON, each error."""
    env = dict(os.environ, **{switch: "1" if thin else "0"})
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
    differing = 0
    for name, path in chosen(args.dest, args.projects):
        differing += compare(name, path, args.jobs, "TAPELINT_THIN", ("whole", "thin")) if path else 1
    return 1 if differing else 0


def chosen(dest: str | None, names: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """Each named project with its folder in the corpus (None, said so, when
    it is not there)."""
    present = {p.name: p for p in projects(corpus_dest(dest))}
    for name in names:
        project = present.get(name)
        if project is None:
            print(f"{name}: not in the corpus", flush=True)
        yield name, project.path if project is not None else None


def compare(name: str, path: str, jobs: int, switch: str, labels: tuple[str, str]) -> int:
    """Lint the project at `path` with `switch` off and on, under each
    semantics; print both ways' diagnostics compared and their CPU. How
    many semantics differ."""
    differing = 0
    for semantics in ("torch", "strict"):
        off, off_found, off_errors = check(path, semantics, jobs, False, switch)
        on, on_found, on_errors = check(path, semantics, jobs, True, switch)
        same = off_found == on_found and off_errors == on_errors
        differing += not same
        verdict = "identical" if same else "DIFFERENT"
        print(f"{name:22} {semantics:6} {len(off_found):3} diagnostics {len(off_errors):2} errors  {verdict}"
              f"   CPU {labels[0]} {off.cpu:6.1f} s  {labels[1]} {on.cpu:6.1f} s", flush=True)
        for line in sorted(set(off_found + off_errors) ^ set(on_found + on_errors)):
            side = f"{labels[0]} only" if line in off_found + off_errors else f"{labels[1]} only"
            print(f"    {side}: {line[:400]}", flush=True)
    return differing


if __name__ == "__main__":
    sys.exit(main())
