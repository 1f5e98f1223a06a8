"""`tapelint check - --stdin-filename NAME`, through the real command and a
real pipe, as an editor or a formatter runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TWICE = b"""\
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (x.exp() * x).sum()
loss.backward()
loss.backward()
"""


def _tapelint(args: list[str], stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    completed = subprocess.run(
        [sys.executable, "-m", "tapelint", *args], input=stdin, cwd=cwd, env=env, capture_output=True, timeout=120
    )
    return subprocess.CompletedProcess(
        completed.args, completed.returncode, completed.stdout.decode("utf-8"), completed.stderr.decode("utf-8")
    )


def test_stdin_is_reported_under_the_given_name(tmp_path):
    completed = _tapelint(["check", "-", "--stdin-filename", "pkg/train.py", "--format", "json"], TWICE, tmp_path)
    assert completed.returncode == 1, completed.stderr
    document = json.loads(completed.stdout)
    assert document["files_checked"] == 1
    [diagnostic] = document["diagnostics"]
    assert (diagnostic["code"], diagnostic["path"], diagnostic["range"]["start"]["line"]) == ("TL004", "pkg/train.py", 5)
    assert {related["path"] for related in diagnostic["related"]} == {"pkg/train.py"}


def test_source_lines_come_from_stdin_not_from_the_file_on_disk(tmp_path):
    """The buffer an editor pipes is newer than the file it is named after."""
    (tmp_path / "train.py").write_text("# an older version of the file\n" * 10)
    completed = _tapelint(["check", "-", "--stdin-filename", "train.py"], TWICE, tmp_path)
    assert completed.returncode == 1
    assert "train.py:5:1: TL004" in completed.stdout
    assert "5 | loss.backward()" in completed.stdout
    assert "older version" not in completed.stdout


def test_without_a_name_stdin_is_reported_as_dash(tmp_path):
    completed = _tapelint(["check", "-", "--format", "github"], TWICE, tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.startswith("::error file=-,line=5,col=1,")


def test_clean_stdin_exits_zero(tmp_path):
    completed = _tapelint(["-", "--stdin-filename", "clean.py"], b"import torch\nx = torch.ones(2)\n", tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "All checks passed (1 file checked" in completed.stdout


def test_stdin_is_decoded_like_a_file(tmp_path):
    latin1 = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + TWICE
    completed = _tapelint(["check", "-", "--stdin-filename", "t.py", "--format", "json"], latin1, tmp_path)
    assert [d["range"]["start"]["line"] for d in json.loads(completed.stdout)["diagnostics"]] == [7]

    binary = _tapelint(["check", "-", "--stdin-filename", "t.py", "--format", "json"], b"x = 1\0\n", tmp_path)
    assert binary.returncode == 1
    assert json.loads(binary.stdout)["errors"] == [{"path": "t.py", "message": "binary file (contains NUL bytes), not checked"}]


def test_stdin_honours_suppressions_and_the_configuration_next_to_its_name(tmp_path):
    suppressed = TWICE.replace(b"loss.backward()\nloss.backward()", b"loss.backward()\nloss.backward()  # noqa: TL004")
    assert _tapelint(["check", "-", "--stdin-filename", "t.py"], suppressed, tmp_path).returncode == 0

    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "pyproject.toml").write_text('[tool.tapelint]\nignore = ["TL004"]\n')
    assert _tapelint(["check", "-", "--stdin-filename", "legacy/t.py"], TWICE, tmp_path).returncode == 0
    assert _tapelint(["check", "-", "--stdin-filename", "other/t.py"], TWICE, tmp_path).returncode == 1


def test_lsp_format_names_the_file_uri(tmp_path):
    completed = _tapelint(["check", "-", "--stdin-filename", "pkg/train.py", "--format", "lsp"], TWICE, tmp_path)
    [params] = [json.loads(line) for line in completed.stdout.splitlines()]
    assert params["uri"] == (tmp_path / "pkg" / "train.py").resolve().as_uri()
    assert params["diagnostics"][0]["range"]["start"] == {"line": 4, "character": 0}


def test_stdin_usage_errors(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    for args in (
        ["check", "a.py", "--stdin-filename", "t.py"],  # a name, but no `-`
        ["check", "-", "a.py"],  # `-` among other paths
    ):
        completed = _tapelint(args, TWICE, tmp_path)
        assert completed.returncode == 2, args
        assert completed.stderr.startswith("tapelint: error: "), completed.stderr
    assert (tmp_path / "a.py").read_text() == "x = 1\n" and not (tmp_path / "t.py").exists()


def test_fix_on_stdin_prints_the_fixed_source_and_never_writes_the_named_file(tmp_path):
    completed = _tapelint(["check", "-", "--stdin-filename", "t.py", "--fix", "--unsafe-fixes"], TWICE, tmp_path)
    assert completed.stdout == TWICE.decode().replace("loss.backward()\nloss.backward()\n", "loss.backward()\n")
    assert "Fixed 1 diagnostic" in completed.stderr and completed.returncode == 0
    assert not (tmp_path / "t.py").exists()


def test_fix_on_stdin_reports_what_remains_on_stderr_and_keeps_the_encoding(tmp_path):
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + TWICE
    completed = subprocess.run([sys.executable, "-m", "tapelint", "check", "-", "--fix"], input=source, cwd=tmp_path,
                               env={**os.environ, "NO_COLOR": "1"}, capture_output=True, timeout=120)
    assert completed.stdout == source  # the fix is unsafe: without --unsafe-fixes nothing changes, byte for byte
    assert completed.returncode == 1
    stderr = completed.stderr.decode()
    assert "-:7:1: TL004" in stderr and "Fixed 0 diagnostics (1 more with `--unsafe-fixes`)" in stderr


def test_diff_on_stdin_prints_a_diff_under_the_stdin_filename(tmp_path):
    completed = _tapelint(["check", "-", "--stdin-filename", "t.py", "--diff", "--unsafe-fixes"], TWICE, tmp_path)
    assert completed.stdout.startswith("--- t.py\n+++ t.py\n") and "-loss.backward()\n" in completed.stdout
    assert completed.returncode == 1 and "Would fix 1 diagnostic" in completed.stderr
    unchanged = _tapelint(["check", "-", "--diff"], TWICE, tmp_path)
    assert unchanged.stdout == "" and unchanged.returncode == 0
    assert "Would fix 0 diagnostics (1 more with `--unsafe-fixes`)" in unchanged.stderr
