"""`--show-traceback` / TAPELINT_DEBUG=1: an internal error stays one line
that says how to see more, and with the switch its traceback is printed."""

from __future__ import annotations

from pathlib import Path

import pytest

import tapelint.runner
from tapelint import debug
from tapelint.cli import main


def _analysis_bug(*args: object, **kwargs: object) -> object:
    raise ValueError("analysis bug\nsecond line")


@pytest.fixture
def crashing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(debug.ENV_VAR, "0")  # off, and restored after the test whatever enable() did
    monkeypatch.setattr(tapelint.runner, "_linter", lambda: _analysis_bug)
    target = tmp_path / "crash.py"
    target.write_text("import torch\nloss.backward()\n", encoding="utf-8")
    return target


def test_the_error_line_says_how_to_see_the_traceback(crashing: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(crashing), "--jobs", "1", "--no-color"]) == 2
    out, err = capfd.readouterr()
    assert "internal error: ValueError: analysis bug (run with --show-traceback to see the traceback)" in out
    assert "Traceback" not in out + err


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_the_switch_prints_the_traceback(crashing: Path, capfd: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    # capfd: files are linted in worker processes, which print to the real stderr.
    argv = ["check", str(crashing), "--jobs", "1", "--no-color"]
    if how == "flag":
        argv.append("--show-traceback")
    else:
        monkeypatch.setenv(debug.ENV_VAR, "1")
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert "crash.py: error: internal error: ValueError: analysis bug" in out and "--show-traceback" not in out
    assert "Traceback (most recent call last)" in err and "in _analysis_bug" in err


def test_a_crash_outside_the_files_prints_its_traceback_too(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(debug.ENV_VAR, "0")
    monkeypatch.setattr("tapelint.cli.discover", _analysis_bug)
    assert main(["check", ".", "--no-color"]) == 2
    assert capsys.readouterr().err == (
        "tapelint: internal error: ValueError: analysis bug (run with --show-traceback to see the traceback)\n")
    assert main(["check", ".", "--no-color", "--show-traceback"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)")
    assert err.endswith("tapelint: internal error: ValueError: analysis bug\n")


def test_zero_means_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(debug.ENV_VAR, "0")
    assert not debug.enabled()
    monkeypatch.setenv(debug.ENV_VAR, "1")
    assert debug.enabled()
