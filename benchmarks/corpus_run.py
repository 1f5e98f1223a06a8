"""Run tapelint over every project of the real-code corpus: findings and speed.

    python benchmarks/corpus_run.py [--dest DIR] [--projects NAME ...] [--jobs 2]
                                    [--out FILE] [--no-bare]

For each project (see `corpus.py`; build it first) the `tapelint check
--format json` command runs cold, once with `--semantics torch` and once with
`--semantics strict`, under `nice -n 10`, exactly as a user would start it on
the project folder (notebooks excluded, so both runs see the same text); then
`bare_parse.py` parses the same files with the same number of processes.
Each is a subprocess, so `getrusage(RUSAGE_CHILDREN)` around it gives the
CPU-seconds of its whole process tree (the pool workers included), next to
wall time: on a shared machine wall time swings by 2x, CPU much less.

Printed per project: files, lines, findings by rule under each semantics,
findings per 100k lines, wall and CPU seconds of the default-semantics run
and of the bare parse, and their ratios (issue 12's bar: whole tree, cold,
<= 0.8x). Then totals, for the whole corpus and for issue 12's eight
repositories. The machine's load average is printed before and after.
Every finding is written to `--out` (default `DEST/findings.json`, outside
the repository) for triage: project, semantics, path relative to the
project, line, code, message.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from bare_parse import count_lines
from corpus import Project, corpus_dest, projects, python_files

SEMANTICS = ("torch", "strict")
HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Timed:
    """One subprocess: wall seconds and CPU seconds of its whole process tree."""

    wall: float
    cpu: float
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Finding:
    project: str
    semantics: str
    path: str
    line: int
    code: str
    message: str


@dataclass(frozen=True)
class ProjectRun:
    project: Project
    files: int
    lines: int
    lint: dict[str, Timed]
    findings: tuple[Finding, ...]
    errors: tuple[str, ...]
    bare: Timed | None = None

    def by_rule(self, semantics: str) -> Counter[str]:
        return Counter(f.code for f in self.findings if f.semantics == semantics)


def timed(command: Sequence[str], cwd: str | None = None, env: dict[str, str] | None = None) -> Timed:
    """Run `command` niced; CPU is the children's rusage delta (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(["nice", "-n", "10", *command], capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(wall, cpu, done.returncode, done.stdout, done.stderr)


def tapelint_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "tapelint")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "tapelint"]


def build_kind(python: str = sys.executable) -> str:
    """Which build of tapelint `python` runs (by default `tapelint_command`'s):
    the analysis compiled by mypyc (`TAPELINT_COMPILE=1`) or pure Python; the
    two differ by a third of the CPU, so every figure says which it is."""
    done = subprocess.run([python, "-c", "import tapelint.analysis.state as m; print(m.__file__)"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return "unknown build (tapelint does not import)"
    compiled = done.stdout.strip().endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    return "compiled (mypyc)" if compiled else "pure Python"


def check_command(launcher: Sequence[str], semantics: str, jobs: int, paths: Sequence[str]) -> list[str]:
    """`tapelint check` as every corpus measurement starts it (`launcher`: how
    tapelint is started). Cold every time: a result cache left by an earlier
    run (or by the other semantics) would time its lookups, not the analysis."""
    return [*launcher, "check", "--no-cache", "--format", "json", "--semantics", semantics, "--jobs", str(jobs),
            "--exclude", "*.ipynb", *paths]


@contextmanager
def file_listing(files: Sequence[str]) -> Iterator[str]:
    """A temporary file naming `files`, one per line (`bare_parse.py --files-from`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write("".join(f"{path}\n" for path in files))
    try:
        yield listing.name
    finally:
        os.unlink(listing.name)


def bare_command(listing: str, jobs: int) -> list[str]:
    return [sys.executable, os.path.join(HERE, "bare_parse.py"), "--jobs", str(jobs), "--files-from", listing]


def lint(project: Project, semantics: str, jobs: int) -> tuple[Timed, list[Finding], list[str]]:
    run = timed(check_command(tapelint_command(), semantics, jobs, [project.path]))
    try:  # exit 2 with a report: some file hit an internal error, the others were checked
        report = json.loads(run.stdout)
    except json.JSONDecodeError:
        return run, [], [f"tapelint exited {run.returncode} without a report: {run.stderr.strip()[-300:]}"]
    findings = [
        Finding(
            project.name,
            semantics,
            os.path.relpath(d["path"], project.path),
            d["range"]["start"]["line"],
            d["code"],
            d["message"],
        )
        for d in report["diagnostics"]
    ]
    errors = [f"{os.path.relpath(e['path'], project.path)}: {e['message']}" for e in report.get("errors", ())]
    return run, findings, errors


def bare(files: Sequence[str], jobs: int) -> Timed:
    with file_listing(files) as listing:
        return timed(bare_command(listing, jobs))


def run_project(project: Project, jobs: int, with_bare: bool) -> ProjectRun:
    files = python_files(project.path)
    lines = count_lines(files)  # also warms the page cache for every run
    timings: dict[str, Timed] = {}
    findings: list[Finding] = []
    errors: list[str] = []
    for semantics in SEMANTICS:
        timings[semantics], found, failed = lint(project, semantics, jobs)
        findings += found
        errors += [f"[{semantics}] {e}" for e in failed]
    return ProjectRun(
        project, len(files), lines, timings, tuple(findings), tuple(errors), bare(files, jobs) if with_bare else None
    )


def load() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return " ".join(handle.read().split()[:3])


def rules_cell(counts: Counter[str]) -> str:
    return " ".join(f"{code}:{n}" for code, n in sorted(counts.items())) or "-"


@dataclass
class Totals:
    files: int = 0
    lines: int = 0
    torch: Counter[str] = field(default_factory=Counter)
    strict: Counter[str] = field(default_factory=Counter)
    lint_wall: float = 0.0
    lint_cpu: float = 0.0
    bare_wall: float = 0.0
    bare_cpu: float = 0.0

    def add(self, run: ProjectRun) -> None:
        self.files += run.files
        self.lines += run.lines
        self.torch += run.by_rule("torch")
        self.strict += run.by_rule("strict")
        self.lint_wall += run.lint["torch"].wall
        self.lint_cpu += run.lint["torch"].cpu
        if run.bare is not None:
            self.bare_wall += run.bare.wall
            self.bare_cpu += run.bare.cpu


def per_100k(count: int, lines: int) -> float:
    return 100_000 * count / lines if lines else 0.0


def print_row(name: str, t: Totals) -> None:
    torch_n, strict_n = sum(t.torch.values()), sum(t.strict.values())
    speed = f"{t.lint_wall:7.1f} {t.lint_cpu:7.1f}"
    if t.bare_cpu:
        speed += f" {t.bare_wall:7.1f} {t.bare_cpu:7.1f}"
        speed += f" {t.lint_wall / t.bare_wall:5.2f}x {t.lint_cpu / t.bare_cpu:5.2f}x"
    print(
        f"{name:27} {t.files:5} {t.lines:9,} {torch_n:4} {per_100k(torch_n, t.lines):6.1f} {strict_n:5}"
        f" {per_100k(strict_n, t.lines):6.1f}  {speed}"
    )
    print(f"{'':27}   torch: {rules_cell(t.torch)}   strict: {rules_cell(t.strict)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", help="corpus folder (as for corpus.py)")
    parser.add_argument("--projects", nargs="+", metavar="NAME", help="only these projects")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for every run (default 2)")
    parser.add_argument("--out", help="findings JSON (default: DEST/findings.json)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare-parse baseline (findings only)")
    args = parser.parse_args(argv)
    dest = os.path.abspath(corpus_dest(args.dest))
    chosen = [p for p in projects(dest) if not args.projects or p.name in args.projects]
    missing = set(args.projects or ()) - {p.name for p in chosen}
    if missing or not chosen:
        sys.exit(f"error: not in the corpus at {dest}: {', '.join(sorted(missing)) or 'anything'} (run corpus.py)")
    out = os.path.abspath(args.out or os.path.join(dest, "findings.json"))

    print(f"corpus at {dest}; jobs {args.jobs}; tapelint {build_kind()}; load average before: {load()}")
    print(f"{'project':27} {'files':>5} {'lines':>9} {'TL':>4} {'/100k':>6} {'strTL':>5} {'/100k':>6}"
          f"  {'wall':>7} {'cpu':>7}"
          + ("" if args.no_bare else f" {'bare-w':>7} {'bare-c':>7} {'wallx':>6} {'cpux':>6}"))
    runs: list[ProjectRun] = []
    everything, issue12, no_torch = Totals(), Totals(), Totals()
    for project in chosen:
        run = run_project(project, args.jobs, not args.no_bare)
        runs.append(run)
        single = Totals()
        scopes = (single, everything, *((issue12,) if project.issue12 else ()),
                  *((no_torch,) if project.name != "torch" else ()))
        for totals in scopes:
            totals.add(run)
        print_row(project.name, single)
        for error in run.errors[:5]:
            print(f"{'':27}   error: {error}")
        sys.stdout.flush()
    print_row("TOTAL", everything)
    print_row("TOTAL without torch", no_torch)
    if issue12.files:
        print_row("issue 12's eight repos", issue12)
    print(f"load average after: {load()}")
    print("columns: TL/strTL = findings under torch/strict semantics; wall/cpu = seconds of the torch-semantics "
          "tapelint run (whole process tree); bare-w/bare-c = bare libcst parse of the same files; "
          "wallx/cpux = tapelint / bare")

    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(
            {
                "corpus": dest,
                "projects": [
                    {"name": r.project.name, "path": r.project.path, "files": r.files, "lines": r.lines,
                     "errors": list(r.errors)}
                    for r in runs
                ],
                "findings": [asdict(f) for r in runs for f in r.findings],
            },
            handle,
            indent=1,
        )
    print(f"findings written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
