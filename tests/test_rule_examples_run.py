"""Every rule's own examples, run: under real PyTorch and on the engine in
both semantics, each does what its `torch=` / `strict=` declaration says (the
fixtures' header syntax), so the documentation never shows a program that
behaves otherwise. And what the rule says about an example holds: an invalid
example fails or grows under each semantics it is reported in and runs under
the one it is not; a valid example runs (it may grow: a combined loss keeps
its graph until its one backward)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

from declared_runs import assert_engine_run, assert_torch_run, run_under_torch
from fixture_spec import PROFILES, Outcome, parse_outcome
from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.rules import ALL_RULES
from tapelint.rules.base import Invalid, Valid
from tapelint.settings import Settings

EXAMPLES = {f"{rule.code}-{kind}-{i}": (rule, example)
            for rule in ALL_RULES for kind in ("invalid", "valid")
            for i, example in enumerate(getattr(rule, kind))}
NAMES = sorted(EXAMPLES)


def _declared(name: str, profile: str) -> Outcome:
    example = EXAMPLES[name][1]
    value = getattr(example, profile)
    assert value, f"{name} declares no {profile}= outcome"
    return parse_outcome(Path(name), 1, value, len(example.code.splitlines()))


def _watched(example: Invalid | Valid) -> tuple[int, ...]:
    return tuple(range(1, len(example.code.splitlines()) + 1))  # growth anywhere in the example


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("rule_examples")
    for name, (_, example) in EXAMPLES.items():
        (work / f"{name}.py").write_text(example.code, encoding="utf-8")
    return work


@pytest.fixture(scope="module")
def torch_runs(workdir) -> dict:
    pytest.importorskip("torch")
    return run_under_torch([workdir / f"{name}.py" for name in NAMES], workdir)


@lru_cache(maxsize=1)
def _engine_runs(work: str) -> dict:
    from tapelint_engine.runner import run_program

    def run(case):
        name, profile = case
        example = EXAMPLES[name][1]
        return case, run_program(str(Path(work) / f"{name}.py"), profile, timeout=60, watch_lines=_watched(example))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, [(n, p) for n in NAMES for p in PROFILES]))


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_as_declared_under_torch(name, torch_runs, workdir):
    assert_torch_run(torch_runs[str((workdir / f"{name}.py").resolve())], _declared(name, "torch"), name)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", NAMES)
def test_example_runs_as_declared_on_the_engine(name, profile, workdir):
    pytest.importorskip("numpy")
    report = _engine_runs(str(workdir))[(name, profile)]
    assert_engine_run(report, _declared(name, profile), _watched(EXAMPLES[name][1]))


@pytest.mark.parametrize("name", NAMES)
def test_what_the_rule_says_about_the_example_holds(name):
    rule, example = EXAMPLES[name]
    for profile in PROFILES:
        outcome = _declared(name, profile).kind
        reported = any(d.code == rule.code for d in lint_source(
            example.code, "example.py", Settings(semantics=Semantics(profile))).diagnostics)
        if isinstance(example, Invalid) and reported:
            assert outcome != "ok", f"{name}: reported under {profile}, but it runs without harm"
        elif isinstance(example, Invalid) or profile == example.semantics:
            assert outcome in ("ok", "grows"), f"{name}: not reported under {profile}, but it {outcome}"
