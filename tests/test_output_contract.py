"""docs/ states the output contract; these tests keep it true: real output
validates against docs/output.schema.json, and the tables in docs/ are the
code's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tapelint.diagnostics import FixKind, Role, Safety, Semantics, Severity
from tapelint.rules import ALL_RULES

ROOT = Path(__file__).parents[1]
SCHEMA = json.loads((ROOT / "docs" / "output.schema.json").read_text(encoding="utf-8"))
RULES_MD = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
OUTPUT_MD = (ROOT / "docs" / "output.md").read_text(encoding="utf-8")
VALIDATOR = Draft202012Validator(SCHEMA)
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "source": "import torch\nx = torch.ones(2, requires_grad=True)\n", "metadata": {}, "outputs": []},
        {"cell_type": "markdown", "source": "# loop", "metadata": {}},
        {"cell_type": "code", "source": "feats = x.exp()\nfor s in range(3):\n    feats.sum().backward()\n",
         "metadata": {}, "outputs": []},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


def tapelint(*args: str, cwd: Path = ROOT) -> dict:
    done = subprocess.run([sys.executable, "-m", "tapelint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TAPELINT_OUTPUT_FORMAT": ""})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_the_schema_is_a_valid_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


def test_the_fixtures_output_matches_the_schema() -> None:
    document = tapelint("check", "fixtures/", "--format", "json")
    VALIDATOR.validate(document)
    assert {d["code"] for d in document["diagnostics"]} >= {"TL001", "TL002", "TL003", "TL004", "TL005"}
    roles = {r["role"] for d in document["diagnostics"] for r in d["related"]}
    assert roles == {role.value for role in Role}
    assert tapelint("check", "fixtures/", "--format", "json", "--semantics", "strict")["semantics"] == "strict"


def test_notebook_cells_errors_and_warnings_match_the_schema(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "binary.py").write_bytes(b"x = 1\0\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    document = tapelint("check", ".", "missing.py", "--format", "json", cwd=tmp_path)
    VALIDATOR.validate(document)
    cells = [d["range"]["start"].get("cell") for d in document["diagnostics"] if d["path"] == "nb.ipynb"]
    assert cells == [3]
    assert {e["path"] for e in document["errors"]} == {"binary.py", "missing.py"}
    assert "TL900" in {d["code"] for d in document["diagnostics"]}


def test_confirm_output_matches_the_schema() -> None:
    pytest.importorskip("numpy")
    document = tapelint("confirm", "fixtures/tl001_hoisted_features.py", "--format", "json")
    VALIDATOR.validate(document)
    assert document["diagnostics"][0]["confirmation"]["status"] == "confirmed"


RUN_VALIDATOR = Draft202012Validator({"$defs": SCHEMA["$defs"], "$ref": "#/$defs/run"})


def _run_report(program: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "tapelint", "run", program, "--format", "json", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "TAPELINT_OUTPUT_FORMAT": ""})
    assert done.returncode in (0, 1, 2), done.stderr
    return json.loads(done.stdout)


def test_run_reports_match_the_schema() -> None:
    """A run that fails inside a helper (its stack), one that ends well, one on an API
    the engine lacks; and the schema can fail (a stack line 0, an unknown key)."""
    pytest.importorskip("numpy")
    failing = _run_report("tests/engine/programs/custom_function_twice.py")
    RUN_VALIDATOR.validate(failing)
    assert failing["status"] == "error" and failing["stack"] and failing["stack"][-1] == failing["line"]
    strict = _run_report("tests/engine/programs/custom_function_twice.py", "--semantics", "strict")
    RUN_VALIDATOR.validate(strict)
    assert strict["error_kind"] == "tape-consumed"
    fine = _run_report("tests/engine/programs/cnn_classifier.py")
    RUN_VALIDATOR.validate(fine)
    assert fine["status"] == "ok" and fine["stack"] == []
    unsupported = _run_report("tests/engine/programs/maml_torch_func.py", "--semantics", "strict",
                              "--backend", "engine")
    RUN_VALIDATOR.validate(unsupported)
    assert unsupported["status"] == "unsupported"
    assert not RUN_VALIDATOR.is_valid({**failing, "stack": [0]})
    assert not RUN_VALIDATOR.is_valid({**failing, "stack_trace": []})


def test_a_wrong_document_is_rejected() -> None:
    """The schema can fail: a 1-based column 0 line, an unknown role."""
    document = tapelint("check", "fixtures/tl001_hoisted_features.py", "--format", "json")
    document["diagnostics"][0]["range"]["start"]["line"] = 0
    assert not VALIDATOR.is_valid(document)
    document = tapelint("check", "fixtures/tl001_hoisted_features.py", "--format", "json")
    document["diagnostics"][0]["related"][0]["role"] = "second-backward"
    assert not VALIDATOR.is_valid(document)


def test_the_schema_enums_are_the_code_enums() -> None:
    definitions = SCHEMA["$defs"]
    assert definitions["semantics"]["enum"] == [s.value for s in Semantics]
    assert definitions["related"]["properties"]["role"]["enum"] == [r.value for r in Role]
    assert definitions["fix"]["properties"]["kind"]["enum"] == [k.value for k in FixKind]
    assert definitions["fix"]["properties"]["safety"]["enum"] == [s.value for s in Safety]
    assert definitions["diagnostic"]["properties"]["severity"]["enum"] == [s.value for s in Severity]


def test_the_rule_table_is_the_registry() -> None:
    rows = re.findall(r"^\| (TL\d{3}) \| ([a-z-]+) \|", RULES_MD, re.MULTILINE)
    assert rows == [(rule.code, rule.name) for rule in ALL_RULES]


def test_the_role_table_names_every_role() -> None:
    roles = re.findall(r"^\| `([a-z-]+)` \|", RULES_MD, re.MULTILINE)
    assert roles == [role.value for role in Role]


def test_the_exit_code_table_names_every_command() -> None:
    from tapelint.cli import COMMANDS

    commands = {name for row in re.findall(r"^\| `([a-z, `-]+)` \|", OUTPUT_MD, re.MULTILINE)
                for name in re.findall(r"[a-z]+", row)}
    assert set(COMMANDS) <= commands


def test_every_rule_module_is_registered_under_its_own_name() -> None:
    """`rules.codes` names each rule's module, and the registry loads every
    rule from its module: a rule file left out of the list is a rule no one runs."""
    import tapelint.rules
    from tapelint.rules.codes import MODULES, resolve_code

    folder = Path(tapelint.rules.__file__).parent
    on_disk = sorted(path.stem for path in folder.glob("tl[0-9][0-9][0-9]_*.py"))
    assert list(MODULES) == on_disk
    assert [(rule.code, rule.name, rule.__module__.rsplit(".", 1)[1]) for rule in ALL_RULES] == [
        (module[:5].upper(), module[6:].replace("_", "-"), module) for module in MODULES]
    assert all(resolve_code(rule.name) == resolve_code(rule.code.lower()) == rule.code for rule in ALL_RULES)
