"""The text and JSON reporters, on diagnostics built by hand."""

from __future__ import annotations

import io
import json

from tapelint.diagnostics import (
    Diagnostic,
    Edit,
    FileError,
    FileResult,
    Fix,
    FixKind,
    Range,
    Related,
    Role,
    Safety,
    Semantics,
    Severity,
)
from tapelint.reporters import REPORTERS, Report, ReportOptions

SOURCE = "import torch\nfeats = encoder(x)\nfor batch in loader:\n\tloss = head(feats)\n\tloss.backward()\n"


def diagnostic(path: str = "train.py", rng: Range = Range.of(2, 8, 2, 18), **extra: object) -> Diagnostic:
    fields: dict[str, object] = dict(
        code="TL001",
        name="hoisted-tracked-tensor",
        severity=Severity.ERROR,
        message="`feats` is computed once at line 2, outside the loop at line 3",
        path=path,
        range=rng,
        fails_under=(Semantics.TORCH, Semantics.STRICT),
    )
    fields.update(extra)
    return Diagnostic(**fields)  # type: ignore[arg-type]


def render(results: tuple[FileResult, ...], fmt: str = "text", **options: object) -> str:
    out = io.StringIO()
    report = Report("9.9.9", Semantics.TORCH, results)
    REPORTERS[fmt](report, out, ReportOptions(read_source=lambda path: SOURCE, **options))  # type: ignore[arg-type]
    return out.getvalue()


def test_text_header_snippet_and_carets() -> None:
    text = render((FileResult("train.py", diagnostics=(diagnostic(),)),))
    lines = text.splitlines()
    assert lines[0] == "train.py:2:9: TL001 `feats` is computed once at line 2, outside the loop at line 3"
    assert lines[1:4] == ["  |", "2 | feats = encoder(x)", "  |         ^^^^^^^^^^"]
    assert lines[-1] == "Found 1 diagnostic in 1 file (1 file checked)."


def test_text_related_and_fixes_are_indented_notes() -> None:
    d = diagnostic(
        related=(
            Related(Role.DEFINITION, "train.py", Range.of(2, 8, 2, 18), "created here"),  # same as primary: omitted
            Related(Role.FAILS_AT, "train.py", Range.of(5, 1, 5, 16), "fails on the second iteration"),
        ),
        fixes=(Fix(FixKind.DETACH, Safety.UNSAFE, "detach `feats` where it is created", (Edit(Range.of(2, 8, 2, 18), "x"),)),),
    )
    lines = render((FileResult("train.py", diagnostics=(d,)),)).splitlines()
    assert lines[4:7] == [
        "  |",
        "  = fails-at train.py:5:2: fails on the second iteration",
        "  = help (unsafe fix): detach `feats` where it is created",
    ]
    assert not any("created here" in line for line in lines)


def test_text_tabs_expand_and_multiline_ranges_clip_to_first_line() -> None:
    d = diagnostic(rng=Range.of(4, 1, 5, 5))  # `loss = head(feats)` after a tab, into the next line
    lines = render((FileResult("train.py", diagnostics=(d,)),)).splitlines()
    assert lines[0].startswith("train.py:4:2: TL001")
    assert lines[2] == "4 |     loss = head(feats)"
    assert lines[3] == "  |     " + "^" * len("loss = head(feats)")


def test_text_zero_width_range_gets_one_caret_and_missing_source_gets_header_only() -> None:
    zero = render((FileResult("train.py", diagnostics=(diagnostic(rng=Range.of(3, 20, 3, 20)),)),)).splitlines()
    assert zero[3] == "  |" + " " * 21 + "^"
    out = io.StringIO()
    report = Report("9", Semantics.TORCH, (FileResult("gone.py", diagnostics=(diagnostic("gone.py"),)),))
    REPORTERS["text"](report, out, ReportOptions())
    assert out.getvalue().splitlines()[0].startswith("gone.py:2:9: TL001")
    assert out.getvalue().splitlines()[1].startswith("Found 1 diagnostic")


def test_text_errors_summary_and_quiet() -> None:
    results = (
        FileResult("a.py", diagnostics=(diagnostic("a.py"),)),
        FileResult("b.py", diagnostics=(diagnostic("b.py"), diagnostic("b.py", Range.of(3, 0, 3, 3)))),
        FileResult("bin.py", errors=(FileError("bin.py", "binary file (contains NUL bytes), not checked"),)),
        FileResult("skip.py", skipped=True),
    )
    text = render(results)
    assert "bin.py: error: binary file (contains NUL bytes), not checked\n" in text
    assert text.splitlines()[-1] == (
        "Found 3 diagnostics in 2 files (3 files checked, 1 skipped by the pre-check). 1 file could not be checked."
    )
    assert "Found" not in render(results, quiet=True)
    assert render((FileResult("a.py"), FileResult("b.py"))).strip() == "All checks passed (2 files checked)."
    only_errors = render((FileResult("bin.py", errors=(FileError("bin.py", "x"),)),))
    assert only_errors.splitlines()[-1] == "No diagnostics (0 files checked). 1 file could not be checked."


def test_text_color_only_when_asked() -> None:
    results = (FileResult("train.py", diagnostics=(diagnostic(),)),)
    assert "\x1b[" not in render(results)
    colored = render(results, color=True)
    assert "\x1b[1;31mTL001\x1b[0m" in colored


def test_json_matches_the_contract() -> None:
    d = diagnostic(
        related=(Related(Role.FAILS_AT, "train.py", Range.of(5, 1, 5, 16), "fails"),),
        fixes=(Fix(FixKind.DETACH, Safety.UNSAFE, "detach", (Edit(Range.of(2, 8, 2, 18), "encoder(x).detach()"),)),),
    )
    results = (
        FileResult("train.py", diagnostics=(d,)),
        FileResult("bad.py", errors=(FileError("bad.py", "permission denied"),)),
        FileResult("ok.py", skipped=True),
    )
    document = json.loads(render(results, "json"))
    assert list(document) == ["version", "semantics", "files_checked", "diagnostics", "errors"]
    assert document["version"] == "9.9.9" and document["semantics"] == "torch"
    assert document["files_checked"] == 2
    assert document["errors"] == [{"path": "bad.py", "message": "permission denied"}]
    [entry] = document["diagnostics"]
    assert entry == d.to_json()
    assert entry["range"] == {"start": {"line": 2, "column": 8}, "end": {"line": 2, "column": 18}}  # 0-based columns
    assert entry["related"][0]["role"] == "fails-at"
    assert entry["fixes"][0]["edits"][0]["new_text"] == "encoder(x).detach()"


def test_text_marks_what_fix_would_fix_and_labels_every_fix() -> None:
    edit = (Edit(Range.of(2, 8, 2, 18), "x"),)
    safe = diagnostic(fixes=(Fix(FixKind.ITEM, Safety.SAFE, "accumulate `loss.item()`", edit),))
    unsafe = diagnostic(rng=Range.of(3, 0, 3, 3), fixes=(
        Fix(FixKind.DETACH, Safety.UNSAFE, "detach `feats`", edit),
        Fix(FixKind.RETAIN_GRAPH, Safety.DISPLAY_ONLY, "pass retain_graph=True"),
    ))
    none = diagnostic(rng=Range.of(4, 0, 4, 3))
    lines = render((FileResult("train.py", diagnostics=(safe, unsafe, none)),)).splitlines()
    headers = [line for line in lines if line.startswith("train.py:")]
    assert [h.split(" `")[0] for h in headers] == ["train.py:2:9: TL001 [*]", "train.py:3:1: TL001", "train.py:4:1: TL001"]
    assert "  = help: accumulate `loss.item()`" in lines
    assert "  = help (unsafe fix): detach `feats`" in lines
    assert "  = help (suggestion only, no edit): pass retain_graph=True" in lines
    assert lines[-2:] == ["[*] 1 fixable with `--fix` (1 more with `--unsafe-fixes`).",
                          "Found 3 diagnostics in 1 file (1 file checked)."]
    assert "fixable" not in render((FileResult("train.py", diagnostics=(none,)),))
    assert "fixable" not in render((FileResult("train.py", diagnostics=(safe,)),), quiet=True)
