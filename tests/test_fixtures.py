"""The linter against every fixture's header: under each profile it reports
exactly the declared diagnostics (code and primary line), each with the
declared `fails_under`, so a fixture can never drift from its declaration."""

from __future__ import annotations

import pytest

from fixture_spec import FIXTURES_DIR, PROFILES, parse_fixture, project_fixture_paths
from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.runner import lint_files
from tapelint.settings import Settings

FIXTURES = sorted(FIXTURES_DIR.glob("*.py"))
CASES = [(path, profile) for path in FIXTURES for profile in PROFILES]
PROJECTS = project_fixture_paths()
PROJECT_CASES = [(path, profile) for path in PROJECTS for profile in PROFILES]


@pytest.mark.parametrize("path,profile", CASES, ids=[f"{p.stem}-{s}" for p, s in CASES])
def test_linter_reports_exactly_the_declared_diagnostics(path, profile):
    spec = parse_fixture(path)
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings(semantics=Semantics(profile)))
    reported = sorted((d.code, d.range.start.line) for d in result.diagnostics)
    declared = sorted((e.code, e.line) for e in spec.expects_under(profile))
    assert reported == declared, "\n".join(f"{d.code} {d.range.start.line}: {d.message}" for d in result.diagnostics)


@pytest.mark.parametrize("path,profile", CASES, ids=[f"{p.stem}-{s}" for p, s in CASES])
def test_fails_under_matches_the_declaration(path, profile):
    spec = parse_fixture(path)
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings(semantics=Semantics(profile)))
    for diagnostic in result.diagnostics:
        declared = [e for e in spec.expects if (e.code, e.line) == (diagnostic.code, diagnostic.range.start.line)]
        if not declared:
            continue
        assert [s.value for s in diagnostic.fails_under] == list(declared[0].profiles)


@pytest.mark.parametrize("path,profile", PROJECT_CASES, ids=[f"{p.parent.name}-{s}" for p, s in PROJECT_CASES])
def test_project_linted_as_one_run_reports_exactly_the_declarations(path, profile):
    """A fixture project is linted as a run of all its files: the file with
    the header reports what it declares (each with its `fails_under`), and no
    other file of the project reports anything."""
    spec = parse_fixture(path)
    files = sorted(str(p) for p in path.parent.rglob("*.py"))
    run = lint_files(files, Settings(semantics=Semantics(profile)), jobs=1)
    assert not run.crashed and all(not r.errors for r in run.results)
    reported = sorted((r.path, d.code, d.range.start.line, tuple(s.value for s in d.fails_under))
                      for r in run.results for d in r.diagnostics)
    declared = sorted((str(path), e.code, e.line, e.profiles) for e in spec.expects_under(profile))
    assert reported == declared, [d.message for r in run.results for d in r.diagnostics]


@pytest.mark.parametrize("profile", PROFILES)
def test_check_fixtures_json_reports_exactly_the_declarations(profile, capsys):
    """The issue's own acceptance: `tapelint check fixtures/ --format json`."""
    import json

    from tapelint.cli import main

    code = main(["check", str(FIXTURES_DIR), "--format", "json", "--semantics", profile])
    document = json.loads(capsys.readouterr().out)
    reported = sorted((d["path"], d["code"], d["range"]["start"]["line"]) for d in document["diagnostics"])
    declared = sorted((str(path), e.code, e.line) for path in FIXTURES + PROJECTS
                      for e in parse_fixture(path).expects_under(profile))
    assert code == 1 and document["errors"] == [] and document["semantics"] == profile
    assert document["files_checked"] == len(list(FIXTURES_DIR.rglob("*.py")))
    assert reported == declared
