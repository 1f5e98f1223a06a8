"""The benchmark of real bug reports (`benchmarks/reports/`): public threads
where someone hit a hazard, each rewritten as a program with a fixture
header and the thread's address (`source:`).

Its headers are held to the truth as the fixtures' are: every program does
under real PyTorch what its `torch:` line says and on the engine what its
`strict:` line says. What tapelint reports is measured by
`benchmarks/bench_reports.py`; here it is held to the header both ways: a
report without `missed:` is reported exactly as declared under both
semantics, and one with `missed:` is not (when a change makes tapelint
find it, this test says so, and the line goes).
"""

from __future__ import annotations

import pytest

from fixture_spec import NAME, PROFILES, REPORTS_DIR, fixture_paths, parse_fixture
from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.settings import Settings

PATHS = fixture_paths(REPORTS_DIR)
IDS = [p.stem for p in PATHS]
MIN_REPORTS = 20


def _reported(path, profile: str) -> list[tuple[str, int]]:
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings(semantics=Semantics(profile)))
    assert not result.errors, result.errors
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


def test_there_are_reports():
    assert len(PATHS) >= MIN_REPORTS, f"only {len(PATHS)} reports in {REPORTS_DIR}"


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_a_report_names_its_thread_and_its_rule(path):
    spec = parse_fixture(path)
    assert spec.source, f"{path.name}: a report says where it comes from (`# source: https://...`)"
    assert NAME.match(path.name), f"{path.name}: expected tlNNN_<what>.py or neg_tlNNN[_tlMMM...]_<what>.py"
    assert not path.name.startswith("neg_") or not spec.expects, f"{path.name} is named a negative but expects"


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_tapelint_reports_what_the_header_says_unless_a_known_miss(path):
    spec = parse_fixture(path)
    matches = {profile: _reported(path, profile) == sorted((e.code, e.line) for e in spec.expects_under(profile))
               for profile in PROFILES}
    if spec.missed is None:
        assert all(matches.values()), {p: _reported(path, p) for p in PROFILES}
    else:
        assert not all(matches.values()), f"{path.name} is reported as declared now: remove its `missed:` line"


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory) -> dict:
    pytest.importorskip("torch")
    from declared_runs import run_under_torch

    return run_under_torch(PATHS, tmp_path_factory.mktemp("torch_reports"))


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_report_runs_as_declared_under_torch(torch_runs, path):
    from declared_runs import assert_torch_run

    assert_torch_run(torch_runs[str(path.resolve())], parse_fixture(path).torch, path.name)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_report_runs_as_declared_on_the_strict_engine(path):
    pytest.importorskip("numpy")
    from declared_runs import assert_engine_run, watch_lines
    from tapelint_engine.runner import run_program

    spec = parse_fixture(path)
    watched = watch_lines(spec, "strict")
    report = run_program(str(path), "strict", timeout=60, watch_lines=watched)
    assert_engine_run(report, spec.strict, watched)
