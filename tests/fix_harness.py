"""Every edit tapelint offers, applied one at a time and judged by running
the result (issue 9: fixes that never break a program).

A *variant* is a program with exactly one offered fix applied (safe or
unsafe, under each semantics it is offered in: identical texts are merged).
It passes when

* it parses and lints clean for that finding (fewer diagnostics of its code
  under that semantics, and no code gains any);
* under real PyTorch and on the engine it runs to the end, or fails only at
  a backward that tapelint still reports in the variant (another finding of
  the same program, not fixed by this edit);
* it does not silently stop learning: when the original gave some leaf a
  gradient, the variant still gives one of those leaves a gradient, and no
  optimizer that steps in the variant steps only parameters without
  gradients unless it did so in the original too (a GAN fix that detaches
  the generator's own loss leaves the generator's optimizer exactly so).

`tests/test_fix_execution.py` runs it over the fixtures, the fixture
projects and the engine's realistic programs.
"""

from __future__ import annotations

import ast
import shutil
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import declared_runs
from tapelint.diagnostics import FileResult, Role, Semantics
from tapelint.document import lint_document
from tapelint.fixes import apply_fixes
from tapelint.settings import Settings

RUNNER = Path(__file__).with_name("fix_torch_runner.py")
ENGINE_TIMEOUT_S = 60


@dataclass(frozen=True)
class Target:
    """A file to lint and fix, and the folder that is its program (a project
    fixture's whole folder, copied with each variant)."""

    path: Path
    root: Path
    project: bool = False

    @property
    def relative(self) -> Path:
        return self.path.relative_to(self.root)

    @property
    def label(self) -> str:
        return f"{self.root.name}/{self.relative}" if self.project else self.path.name


@dataclass
class Variant:
    target: Target
    text: str
    code: str
    line: int
    kind: str
    safety: str
    description: str
    semantics: list[str] = field(default_factory=list)
    folder: Optional[Path] = None

    @property
    def label(self) -> str:
        return f"{self.target.label}:{self.line}:{self.code}:{self.kind}:{self.safety}"

    @property
    def program(self) -> Path:
        assert self.folder is not None
        return self.folder / self.target.relative


def _settings(semantics: str) -> Settings:
    return Settings(semantics=Semantics(semantics), unsafe_fixes=True)


def lint(text: str, path: Path, semantics: str) -> FileResult:
    return lint_document(text, str(path), _settings(semantics))


def variants(targets: Iterable[Target]) -> list[Variant]:
    """One variant per distinct text an offered fix produces."""
    found: dict[tuple[Path, str], Variant] = {}
    for target in targets:
        text = target.path.read_text(encoding="utf-8")
        for semantics in ("torch", "strict"):
            for diagnostic in lint(text, target.path, semantics).diagnostics:
                for fix in diagnostic.fixes:
                    if not fix.edits:
                        continue
                    new_text = apply_fixes({None: text}, [fix])[0][None]
                    key = (target.path, new_text)
                    variant = found.setdefault(key, Variant(target, new_text, diagnostic.code, diagnostic.range.start.line, fix.kind.value,
                                                            fix.safety.value, fix.description))
                    if semantics not in variant.semantics:
                        variant.semantics.append(semantics)
    return list(found.values())


def materialize(targets: Sequence[Target], found: Sequence[Variant], work: Path) -> dict[Target, Path]:
    """Copy each original and each variant into a folder of its own under
    `work` (a project with all its files). Returns the originals' programs."""
    originals = {}
    for i, target in enumerate(targets):
        folder = work / f"original{i}"
        _copy(target, folder)
        originals[target] = folder / target.relative
    for i, variant in enumerate(found):
        variant.folder = work / f"variant{i}"
        _copy(variant.target, variant.folder)
        variant.program.write_text(variant.text, encoding="utf-8")
    return originals


def _copy(target: Target, folder: Path) -> None:
    if target.project:
        shutil.copytree(target.root, folder, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        folder.mkdir(parents=True)
        shutil.copy(target.path, folder / target.path.name)


def run_under_torch(programs: Sequence[Path], work: Path, workers: int = 2) -> dict[str, dict[str, Any]]:
    """`fix_torch_runner.py` over the programs, in a few processes."""
    return declared_runs.run_under_torch(programs, work, runner=RUNNER, workers=workers)


def run_on_engine(runs: Sequence[tuple[Path, str]], workers: int = 2) -> dict[tuple[Path, str], Any]:
    from tapelint_engine.runner import run_program

    def one(run: tuple[Path, str]) -> tuple[tuple[Path, str], Any]:
        return run, run_program(str(run[0]), run[1], timeout=ENGINE_TIMEOUT_S)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, runs))


def still_reported(result: FileResult) -> set[int]:
    """Lines where a remaining diagnostic says the program fails."""
    lines = {d.range.start.line for d in result.diagnostics}
    lines |= {r.range.start.line for d in result.diagnostics for r in d.related if r.role is Role.FAILS_AT}
    return lines


def lint_problems(variant: Variant) -> list[str]:
    problems = []
    try:
        ast.parse(variant.text)
    except SyntaxError as exc:
        return [f"does not parse: {exc}"]
    before_text = variant.target.path.read_text(encoding="utf-8")
    for semantics in variant.semantics:
        before = Counter(d.code for d in lint(before_text, variant.target.path, semantics).diagnostics)
        after = Counter(d.code for d in lint(variant.text, variant.target.path, semantics).diagnostics)
        if after[variant.code] >= before[variant.code]:
            problems.append(f"{semantics}: still {after[variant.code]} {variant.code} (was {before[variant.code]})")
        grown = {code for code in after if after[code] > before[code]}
        if grown:
            problems.append(f"{semantics}: new findings {sorted(grown)}")
    return problems


def torch_problems(variant: Variant, original: dict[str, Any], fixed: dict[str, Any]) -> list[str]:
    problems = []
    if fixed["kind"] != "ok":
        allowed = still_reported(lint(variant.text, variant.target.path, "torch"))
        if not (fixed["kind"] == "fails" and fixed["line"] in allowed):
            problems.append(f"torch: {fixed['kind']} at line {fixed['line']}: {fixed['error']}")
    return problems + learning_problems(original, fixed)


def learning_problems(original: dict[str, Any], fixed: dict[str, Any]) -> list[str]:
    problems = []
    before, after = set(original["received"]), set(fixed["received"])
    if before and not before & after:
        problems.append(f"no leaf that had a gradient gets one any more (before {sorted(before)}, after {sorted(after)})")
    for label, (stepped, with_grad) in fixed["optimizers"].items():
        was = original["optimizers"].get(label)
        if stepped and not with_grad and not (was is not None and was[0] and not was[1]):
            problems.append(f"optimizer {label} now steps only parameters without gradients (a frozen model)")
    return problems


def engine_problems(variant: Variant, reports: dict[tuple[Path, str], Any]) -> list[str]:
    problems = []
    for semantics in variant.semantics:
        report = reports[(variant.program, semantics)]
        if report.status == "ok":
            continue
        allowed = still_reported(lint(variant.text, variant.target.path, semantics))
        failing = report.status == "error" and report.error_kind in ("second-backward", "tape-consumed")
        if not (failing and report.line in allowed):
            problems.append(f"engine {semantics}: {report.status} {report.error_kind} at line {report.line}: "
                            f"{report.error or report.detail}")
    return problems

