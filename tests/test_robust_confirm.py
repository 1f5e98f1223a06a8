"""Issue 10, `confirm`: a missing third-party module is `unsupported`, a
finding whose line never ran is `not-reached`, a notebook is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapelint.cli import main

REPEATED = (
    "import torch\n"
    "w = torch.ones(2, requires_grad=True)\n"
    "a = (w * w).sum()\n"
    "a.backward()\n"
    "a.backward()\n"
    "b = (w * w).sum()\n"
    "b.backward()\n"
    "b.backward()\n"
)


def confirm(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["confirm", "--isolated", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def statuses(document: dict) -> list[tuple[int, str]]:
    return [(d["range"]["start"]["line"], d["confirmation"]["status"]) for d in document["diagnostics"]]


def test_a_finding_behind_an_earlier_failure_is_not_reached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "two.py").write_text(REPEATED)
    _, document = confirm(capsys, str(tmp_path / "two.py"))
    assert statuses(document) == [(5, "confirmed"), (8, "not-reached")]
    [_, second] = document["diagnostics"]
    assert second["confirmation"]["runtime"]["detail"] == "line 8 never ran; the program stopped at line 5"


def test_a_missing_module_is_unsupported_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "vision.py").write_text(REPEATED.replace("import torch\n", "import torch\nimport torchvision_absent\n"))
    _, document = confirm(capsys, str(tmp_path / "vision.py"))
    assert {status for _, status in statuses(document)} == {"unsupported"}
    assert "torchvision_absent" in document["diagnostics"][0]["confirmation"]["runtime"]["detail"]


def test_a_notebook_with_findings_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cell = {"cell_type": "code", "source": REPEATED, "metadata": {}, "outputs": []}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}}))
    code, document = confirm(capsys, str(tmp_path / "nb.ipynb"))
    assert code == 2
    [error] = document["errors"]
    assert error["message"].startswith("notebooks are not run by confirm")
