"""The command line, run in-process through `main`, and once as `python -m tapelint`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint import __version__
from tapelint.cli import main
from tapelint.rules import ALL_RULES

DOUBLE_BACKWARD = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
CLEAN = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\n"
BROKEN = "def f(:\n    pass\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "twice.py").write_text(DOUBLE_BACKWARD)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "broken.py").write_text(BROKEN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_check_reports_rules_and_parse_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--jobs", "1")
    assert code == 1
    assert "twice.py:5:1: TL004 " in out
    assert "pkg/broken.py:1:7: TL900 " in out
    assert out.splitlines()[-1].startswith("Found 2 diagnostics in 2 files (3 files checked")


def test_no_subcommand_means_check_and_options_mix_with_paths(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "clean.py")[0] == 0
    code, out, _ = run(capsys, "clean.py", "--format", "json", "twice.py")
    assert code == 1
    assert [d["path"] for d in json.loads(out)["diagnostics"]] == ["twice.py"]


def test_json_output(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", ".", "--format", "json", "--semantics", "strict")
    document = json.loads(out)
    assert code == 1
    assert document["version"] == __version__ and document["semantics"] == "strict"
    assert document["files_checked"] == 3 and document["errors"] == []
    tl900 = next(d for d in document["diagnostics"] if d["code"] == "TL900")
    assert tl900["path"] == "pkg/broken.py" and tl900["range"]["start"] == {"line": 1, "column": 6}


def test_select_and_ignore_by_code_name_and_prefix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def codes(*argv: str) -> set[str]:
        code, out, _ = run(capsys, "check", "--format", "json", *argv)
        return {d["code"] for d in json.loads(out)["diagnostics"]}

    assert codes("--select", "TL004") == {"TL004", "TL900"}  # parse errors always reported ...
    assert codes("--select", "TL001", "--ignore", "TL900") == set()  # ... unless ignored
    assert codes("--select", "repeated-backward,TL001") == {"TL004", "TL900"}
    assert codes("--select", "tl00") == {"TL004", "TL900"}
    assert codes("--ignore", "TL0") == {"TL900"}
    assert codes("--ignore", "parse-error", "--ignore", "TL004") == set()
    assert codes("--select", "ALL") == {"TL004", "TL900"}


def test_unknown_rule_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", "--select", "TL001,bogus-rule")
    assert code == 2 and out == ""
    assert err.strip() == "tapelint: error: unknown rule or prefix 'bogus-rule' (see `tapelint rules`)"


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--format", "xml"], ["--semantics", "jax"], ["--bogus"]])
def test_bad_options_exit_2(project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert run(capsys, "check", *argv)[0] == 2


def test_exclude_and_quiet(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "--exclude", "pkg,clean.py", "--quiet")
    assert code == 1
    assert "TL900" not in out and "TL004" in out and "Found" not in out
    code, out, _ = run(capsys, "check", "--exclude", "twice.py", "--exclude", "pkg/*")
    assert (code, out.strip()) == (0, "All checks passed (1 file checked).")


def test_no_python_files_is_a_warning_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "README.md").write_text("hi\n")
    code, out, err = run(capsys, "check", str(tmp_path))
    assert (code, out) == (0, "")
    assert err.strip() == f"tapelint: warning: no Python files found under {tmp_path}"


def test_missing_path_is_an_unreadable_file_exit_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As the README says of a file that cannot be read: not checked, so the
    run is not clean (ruff reports a missing path as E902, exit 1)."""
    code, out, _ = run(capsys, "check", "nope.py", "clean.py")
    assert code == 1
    assert out.splitlines()[0] == "nope.py: error: no such file or directory"
    assert "1 file checked" in out


def test_color(project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b[" not in run(capsys, "twice.py")[1]  # not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(capsys, "twice.py")[1]
    assert "\x1b[" not in run(capsys, "twice.py", "--no-color")[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(capsys, "twice.py")[1]


def test_rule_and_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "rule", "TL900")
    assert code == 0 and out.startswith("# parse-error (TL900)") and "## What it does" in out
    assert run(capsys, "rule", "parse-error")[1] == out
    code, out, _ = run(capsys, "rule", "tl900", "--format", "json")
    assert json.loads(out)["code"] == "TL900" and "## Why is this bad" in json.loads(out)["documentation"]
    code, out, err = run(capsys, "rule", "TL999")
    assert code == 2 and "unknown rule 'TL999'" in err
    code, out, _ = run(capsys, "rules")
    assert [line.split()[0] for line in out.splitlines()] == [rule.code for rule in ALL_RULES]
    assert "TL900  parse-error" in out
    listed = json.loads(run(capsys, "rules", "--format", "json")[1])
    assert {"code": "TL900", "name": "parse-error", "summary": "the file cannot be parsed"} in listed
    assert [entry["code"] for entry in listed] == [rule.code for rule in ALL_RULES]


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"tapelint {__version__}")
    code, out, _ = run(capsys, "--help")
    assert code == 0 and all(name in out for name in ("check", "rules", "run", "confirm"))


def test_python_dash_m_in_a_subprocess(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", ".", "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    assert sorted(d["code"] for d in document["diagnostics"]) == ["TL004", "TL900"]
