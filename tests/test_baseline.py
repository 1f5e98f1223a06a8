"""Baselines: recorded findings stay silent when lines shift, new findings
still show, and the file is versioned JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapelint.baseline import BaselineError, load
from tapelint.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCE = (FIXTURES / "tl003_total_loss_plus_equals.py").read_text()  # TL003 at line 22


def check(capsys, *argv: str) -> tuple[int, list[tuple[str, str, int]], str]:
    code = main(["check", "--format", "json", "-j", "1", *argv])
    out, err = capsys.readouterr()
    diagnostics = json.loads(out)["diagnostics"] if out.strip() else []
    return code, [(d["path"], d["code"], d["range"]["start"]["line"]) for d in diagnostics], err


@pytest.fixture
def repo(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SOURCE)
    assert main(["check", "-q", "-j", "1", "--write-baseline", "baseline.json"]) == 0
    assert "recorded 1 finding(s) in baseline.json" in capsys.readouterr()[1]
    return tmp_path


def test_file_format(repo):
    document = json.loads((repo / "baseline.json").read_text())
    assert document["tool"] == "tapelint" and document["version"] == 1
    (entry,) = document["findings"]
    assert entry["path"] == "src/train.py" and entry["code"] == "TL003" and entry["occurrence"] == 0
    assert entry["line"] == 22 and len(entry["fingerprint"]) == 16


def test_baselined_findings_are_silent_even_after_lines_shift(repo, capsys):
    assert check(capsys, "--baseline", "baseline.json")[:2] == (0, [])
    shifted = SOURCE.replace("import torch\n", "import torch\nimport os\n\n\n# a comment\n", 1)
    (repo / "src" / "train.py").write_text(shifted)
    code, found, _ = check(capsys)
    assert (code, found) == (1, [("src/train.py", "TL003", 26)])
    assert check(capsys, "--baseline", "baseline.json")[:2] == (0, [])
    # the same baseline works whatever path is named and wherever tapelint runs
    assert check(capsys, "--baseline", "baseline.json", "src/train.py")[:2] == (0, [])


def test_run_from_another_directory(repo, capsys, monkeypatch):
    monkeypatch.chdir(repo / "src")
    assert check(capsys, "--baseline", "../baseline.json", ".")[:2] == (0, [])


def test_a_new_finding_is_reported(repo, capsys):
    new = SOURCE.replace('print("mean loss"', 'history = []\nfor step in range(2):\n'
                         '    loss = F.mse_loss(model(x), y)\n    loss.backward()\n    history.append(loss)\n\n'
                         'print("mean loss"')
    (repo / "src" / "train.py").write_text(new)
    code, found, _ = check(capsys, "--baseline", "baseline.json")
    assert code == 1 and found == [("src/train.py", "TL003", 28)]


def test_an_edited_finding_is_new_and_a_fixed_one_is_stale(repo, capsys):
    (repo / "src" / "train.py").write_text(SOURCE.replace("total_loss += loss", "total_loss += 2 * loss"))
    code, found, err = check(capsys, "--baseline", "baseline.json")
    assert code == 1 and found == [("src/train.py", "TL003", 22)]
    assert "1 baseline entry matched nothing" in err


def test_identical_findings_are_counted(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    loop = SOURCE[SOURCE.index("for step"):SOURCE.index('print("mean')]
    twice = SOURCE.replace('print("mean', loop + '\nprint("mean')  # the same line, twice
    (tmp_path / "a.py").write_text(SOURCE)
    assert main(["check", "-q", "-j", "1", "--write-baseline", "b.json"]) == 0
    (tmp_path / "a.py").write_text(twice)
    code, found, _ = check(capsys, "--baseline", "b.json")
    assert code == 1 and found == [("a.py", "TL003", 31)]


def test_notebook_findings_are_baselined(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lines = SOURCE.splitlines(keepends=True)

    def notebook(extra: list[str]) -> str:
        cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": extra + lines}]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    (tmp_path / "nb.ipynb").write_text(notebook([]))
    assert main(["check", "-q", "-j", "1", "--write-baseline", "b.json"]) == 0
    (tmp_path / "nb.ipynb").write_text(notebook(["import os\n", "\n"]))
    assert check(capsys)[1] == [("nb.ipynb", "TL003", 24)]
    assert check(capsys, "--baseline", "b.json")[:2] == (0, [])


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not a tapelint baseline"),
        ('{"tool": "ruff"}', "not a tapelint baseline"),
        ('{"tool": "tapelint", "version": 9, "findings": []}', "baseline version 9 is not supported"),
        ('{"tool": "tapelint", "version": 1, "findings": [{"path": "a.py"}]}', "malformed baseline entry"),
    ],
)
def test_bad_baseline_files(tmp_path, monkeypatch, capsys, content, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "b.json").write_text(content)
    with pytest.raises(BaselineError, match=message):
        load("b.json")
    code, found, err = check(capsys, "--baseline", "b.json")
    assert code == 2 and err.startswith("tapelint: error: b.json: ") and err.count("\n") == 1


def test_missing_baseline_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SOURCE)
    code, _, err = check(capsys, "--baseline", "nope.json")
    assert code == 2 and "nope.json: cannot read the baseline" in err
