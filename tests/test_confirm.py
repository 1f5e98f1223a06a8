"""The engine against every fixture's header, and `confirm` against every
declared diagnostic: each fixture runs once per semantics on the engine (in
parallel subprocesses); the run must do what the header says, and every
diagnostic the linter reports must be confirmed by it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pytest

pytest.importorskip("numpy")

from declared_runs import assert_engine_run, watch_lines  # noqa: E402
from fixture_spec import PROFILES, fixture_paths, parse_fixture, project_fixture_paths  # noqa: E402
from tapelint.confirm import judge  # noqa: E402
from tapelint.diagnostics import Semantics  # noqa: E402
from tapelint.lint import lint_source  # noqa: E402
from tapelint.settings import Settings  # noqa: E402
from tapelint_engine.runner import run_program  # noqa: E402

PATHS = fixture_paths() + project_fixture_paths()  # a project's file runs from its folder
CASES = [(path, profile) for path in PATHS for profile in PROFILES]


@lru_cache(maxsize=1)
def _runs() -> dict:
    """One engine run per fixture and semantics, two at a time."""
    def run(case):
        path, profile = case
        watched = watch_lines(parse_fixture(path), profile)
        return case, run_program(str(path), profile, timeout=60, watch_lines=watched)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, CASES))


@pytest.mark.parametrize("path,profile", CASES, ids=[f"{p.stem}-{s}" for p, s in CASES])
def test_engine_run_matches_the_header(path, profile):
    spec = parse_fixture(path)
    assert_engine_run(_runs()[(path, profile)], getattr(spec, profile), watch_lines(spec, profile))


@pytest.mark.parametrize("path,profile", CASES, ids=[f"{p.stem}-{s}" for p, s in CASES])
def test_every_diagnostic_is_confirmed(path, profile):
    semantics = Semantics(profile)
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings(semantics=semantics))
    report = _runs()[(path, profile)]
    verdicts = [(d.code, d.range.start.line, judge(d, report, semantics)) for d in result.diagnostics]
    refuted = [(code, line, v.status, v.runtime) for code, line, v in verdicts if v.status != "confirmed"]
    assert refuted == []
