"""Inline suppressions: `# noqa`, `# tapelint: ignore[...]`, `skip-file`, and
unused suppressions (TL901)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapelint.cli import main
from tapelint.lint import lint_source
from tapelint.settings import Settings
from tapelint.suppressions import lint_module, scan

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCE = (FIXTURES / "tl003_total_loss_plus_equals.py").read_text()
LINE = "    total_loss += loss  # should be loss.item()"  # TL003, line 22
REPORT_UNUSED = Settings(report_unused_suppressions=True)


def with_comment(comment: str, source: str = SOURCE) -> str:
    assert LINE in source
    return source.replace(LINE, f"    total_loss += loss  {comment}")


def found(source: str, settings: Settings = Settings()) -> list[tuple[str, int]]:
    return [(d.code, d.range.start.line) for d in lint_module(source, "a.py", settings).diagnostics]


def test_the_fixture_reports_without_suppressions():
    assert found(SOURCE) == [("TL003", 22)]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: TL003",
        "# noqa:TL003",
        "# NOQA: tl003",
        "# noqa: E501, TL003",
        "# noqa: E501 TL003 because the total is logged",
        "# noqa: tracked-accumulation",
        "# noqa: E501, Tracked-Accumulation",
        "# noqa: TL003, bogus-name",  # the valid item still suppresses; the other is warned about
        "# noqa",
        "# tapelint: ignore[TL003]",
        "# tapelint: ignore[tracked-accumulation]",
        "# tapelint: ignore[TL001, tracked-accumulation]",
        "# tapelint: ignore",
        "# type: ignore  # noqa: TL003",
        "# noqa: E501  # tapelint: ignore[TL003]",
    ],
)
def test_suppressed(comment):
    assert found(with_comment(comment)) == []


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: TL001",
        "# noqa: E501",
        "# tapelint: ignore[TL001]",
        "# noqa: tracked-accumulatoin",
        "# noqa-ish TL003",
        "# noqa:",
        "# noqa: because",
    ],
)
def test_not_suppressed(comment):
    assert found(with_comment(comment)) == [("TL003", 22)]


def test_inside_a_string_is_not_a_suppression():
    assert found(with_comment('; note = "# noqa"')) == [("TL003", 22)]


MULTILINE = SOURCE.replace(LINE, "    total_loss = (total_loss +{first}\n        loss){last}")


@pytest.mark.parametrize("first, last", [("  # noqa: TL003", ""), ("", "  # noqa: TL003")])
def test_first_or_last_line_of_a_multi_line_statement(first, last):
    source = MULTILINE.format(first=first, last=last)
    assert found(MULTILINE.format(first="", last="")) == [("TL003", 22)]
    assert found(source) == []


def test_a_comment_on_the_line_above_does_not_suppress():
    source = SOURCE.replace(LINE, "    # noqa: TL003\n" + LINE)
    assert found(source) == [("TL003", 23)]


def test_skip_file():
    assert found("# tapelint: skip-file\n" + SOURCE) == []
    assert found(SOURCE + "\n# tapelint: skip-file\n") == []
    assert found(SOURCE + "\ndef f():\n    # tapelint: skip-file\n    pass\n") == [("TL003", 22)]
    assert found(SOURCE + '\nx = "# tapelint: skip-file"\n') == [("TL003", 22)]
    # a file skipped is not even parsed: its syntax error goes unreported
    assert found("# tapelint: skip-file\ndef (:\n") == []
    assert found("# TAPELINT: Skip-File\n" + SOURCE) == []


def test_parse_errors_are_not_suppressed_by_a_line_comment():
    assert found("x = (  # noqa\n") == [("TL900", 1)]


def test_unused_suppressions_are_reported_only_when_asked():
    source = with_comment("# noqa: TL003").replace("opt.step()", "opt.step()  # noqa: TL001, E501")
    assert found(source) == []
    diagnostics = lint_module(source, "a.py", REPORT_UNUSED).diagnostics
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("TL901", 21)]
    (unused,) = diagnostics
    assert unused.message == "unused suppression `# noqa: TL001, E501`: TL001 suppresses nothing here"
    (fix,) = unused.fixes
    assert fix.safety.value == "safe" and [e.new_text for e in fix.edits] == ["# noqa: E501"]



def test_an_unused_suppression_after_a_form_feed_is_read_from_its_own_line():
    """A form feed is no line break to CPython, whose tokenizer numbers the
    directive's line: the message quotes the directive, not the text after
    the page break (which `str.splitlines` made a line of its own)."""
    source = "x = 1  # page\x0cbreak\ny = 2  # noqa: TL001\n"
    (unused,) = lint_module(source, "a.py", REPORT_UNUSED).diagnostics
    assert (unused.code, unused.range.start.line) == ("TL901", 2)
    assert unused.message == "unused suppression `# noqa: TL001`: TL001 suppresses nothing here"

@pytest.mark.parametrize(
    "comment, problem",
    [
        ("# tapelint: ignore", "suppresses nothing"),
        ("# tapelint: ignore[TL001]", "TL001 suppresses nothing here"),
        ("# tapelint: ignore[no-such-rule]", "`no-such-rule` is not a tapelint rule"),
        ("# noqa: TL999", "`TL999` is not a tapelint rule"),
    ],
)
def test_unused_suppression_reasons(comment, problem):
    source = SOURCE.replace("opt.step()", f"opt.step()  {comment}")
    diagnostics = lint_module(source, "a.py", REPORT_UNUSED).diagnostics
    assert [d.code for d in diagnostics] == ["TL901", "TL003"]
    assert diagnostics[0].message.endswith(problem)


def test_bare_noqa_is_never_reported_unused():
    source = SOURCE.replace("opt.step()", "opt.step()  # noqa")
    assert found(source, REPORT_UNUSED) == [("TL003", 22)]


def test_a_suppression_of_a_rule_that_is_not_enabled_is_unused():
    source = with_comment("# noqa: TL003")
    settings = Settings(ignore=frozenset({"TL003"}), report_unused_suppressions=True)
    (diagnostic,) = lint_module(source, "a.py", settings).diagnostics
    assert diagnostic.code == "TL901" and diagnostic.message.endswith("TL003 is not enabled")
    # and TL901 itself can be ignored like any rule
    quiet = Settings(ignore=frozenset({"TL003", "TL901"}), report_unused_suppressions=True)
    assert lint_module(source, "a.py", quiet).diagnostics == ()


def apply_fix(source: str, settings: Settings = REPORT_UNUSED) -> str:
    (diagnostic,) = [d for d in lint_module(source, "a.py", settings).diagnostics if d.code == "TL901"]
    (edit,) = diagnostic.fixes[0].edits
    lines = source.splitlines(keepends=True)
    line = lines[edit.range.start.line - 1]
    lines[edit.range.start.line - 1] = line[: edit.range.start.column] + edit.new_text + line[edit.range.end.column:]
    return "".join(lines)


@pytest.mark.parametrize(
    "before, after",
    [
        ("opt.step()  # noqa: TL001", "opt.step()"),
        ("opt.step()  # noqa: TL001 because", "opt.step()  # because"),
        ("opt.step()  # type: ignore  # tapelint: ignore[TL001]", "opt.step()  # type: ignore"),
        ("opt.step()  # tapelint: ignore[TL001]  # noqa: E501", "opt.step()  # noqa: E501"),
    ],
)
def test_unused_suppression_fix(before, after):
    fixed = apply_fix(SOURCE.replace("opt.step()", before))
    assert fixed == SOURCE.replace("opt.step()", after)
    assert [d.code for d in lint_module(fixed, "a.py", REPORT_UNUSED).diagnostics] == ["TL003"]


def test_scan_is_cheap_without_directives_and_survives_tokenizer_errors():
    assert scan(SOURCE.replace("# should be loss.item()", "")).directives == ()
    # a file the tokenizer gives up on: what follows is still read, line by line
    broken = scan("x = (1,\ny = 2  # noqa: TL003\n")
    assert [(d.line, d.rules) for d in broken.directives] == [(2, ("TL003",))]
    assert scan("x = (1,\n# tapelint: skip-file\n").skip_file


def test_lint_source_itself_ignores_comments():
    # suppressions are applied around the analysis (lint_module), not inside it
    assert [d.code for d in lint_source(with_comment("# noqa"), "a.py", Settings()).diagnostics] == ["TL003"]


def test_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(with_comment("# noqa: TL003").replace("opt.step()", "opt.step()  # noqa: TL001"))
    assert main(["check", "-q", "-j", "1"]) == 0
    assert main(["check", "--format", "json", "-j", "1", "--report-unused-suppressions"]) == 1
    (diagnostic,) = json.loads(capsys.readouterr()[0])["diagnostics"]
    assert diagnostic["code"] == "TL901" and diagnostic["name"] == "unused-suppression"
    (tmp_path / "pyproject.toml").write_text('[tool.tapelint]\nextend-select = ["unused-suppression"]\n')
    assert main(["check", "-q", "-j", "1"]) == 1
    assert main(["rule", "TL901"]) == 0
    assert "## Why is this bad" in capsys.readouterr()[0]


def warnings(comment: str) -> list[tuple[int, int, str]]:
    result = lint_module(with_comment(comment), "a.py", Settings())
    return [(w.position.line, w.position.column, w.message) for w in result.warnings]


EXAMPLE = "(e.g. `# noqa: TL001, tracked-accumulation`)"


@pytest.mark.parametrize(
    "comment, message",
    [
        ("# noqa: hoisted-trackd-tensor", "`hoisted-trackd-tensor` is not a tapelint rule name (see `tapelint rules`)"),
        ("# noqa:", f"expected a list of codes or rule names {EXAMPLE}"),
        ("# noqa: because", f"expected a list of codes or rule names, not `because` {EXAMPLE}"),
        ("# noqa: TL003, bogus", f"expected a code or rule name after `,`, not `bogus` {EXAMPLE}"),
        ("# noqa: TL999", "`TL999` is not a tapelint rule (see `tapelint rules`)"),
        ("# tapelint: ignore[bogus, TL003]", "`bogus` is not a tapelint rule (see `tapelint rules`)"),
    ],
)
def test_invalid_directives_are_warned_about_whatever_is_selected(comment, message):
    kind = "tapelint" if "tapelint:" in comment else "noqa"
    assert warnings(comment) == [(22, 24, f"invalid `{kind}` directive: {message}")]


@pytest.mark.parametrize(
    "comment",
    ["# noqa: TL003", "# noqa: hoisted-tracked-tensor", "# noqa: E501 TL003 because it is logged", "# noqa: E501",
     "# noqa", "# tapelint: ignore[tracked-accumulation]"],
)
def test_valid_directives_are_not_warned_about(comment):
    assert warnings(comment) == []


def test_a_directive_text_in_a_string_is_no_directive():
    assert warnings('; note = "# noqa: bogus"') == []


def test_invalid_directive_on_a_clean_file_is_still_warned_about(tmp_path, monkeypatch, capsys):
    """The lazy path (no diagnostic to suppress) must still look."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clean.py").write_text("x = 1  # noqa: hoisted-trackd-tensor\n")
    assert main(["check", "clean.py"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "tapelint: warning: clean.py:1:8: invalid `noqa` directive: "
        "`hoisted-trackd-tensor` is not a tapelint rule name (see `tapelint rules`)\n"
    )


def test_a_rule_name_in_noqa_suppresses_on_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(with_comment("# noqa: tracked-accumulation"))
    assert main(["check", "a.py", "--report-unused-suppressions"]) == 0
    assert capsys.readouterr().err == ""
