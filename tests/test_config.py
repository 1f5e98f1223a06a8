"""`[tool.tapelint]`: every key, discovery, precedence over it by the command
line, and errors (one line, exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapelint.cli import main
from tapelint.config import Config, Overrides, Resolver, Selection, enabled_codes, parse_selector
from tapelint.diagnostics import Semantics

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TL003 = (FIXTURES / "tl003_total_loss_plus_equals.py").read_text()  # TL003 at line 22
TL001 = (FIXTURES / "tl001_hoisted_features.py").read_text()  # TL001 at line 10
STRICT_ONLY = (FIXTURES / "tl001_strict_only_hoisted_add.py").read_text()


def run(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["check", "--format", "json", "-j", "1", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def codes(document: dict) -> list[tuple[str, str]]:
    return [(Path(d["path"]).as_posix(), d["code"]) for d in document["diagnostics"]]


def write_config(directory: Path, body: str) -> Path:
    path = directory / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.tapelint]\n{body}\n")
    return path


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(TL003 + "\n" + TL001.replace("import torch\n", "", 1))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_select_ignore_and_extend_select(project, capsys):
    write_config(project, 'select = ["TL001"]')
    assert codes(run(capsys)[1]) == [("train.py", "TL001")]
    write_config(project, 'select = ["hoisted-tracked-tensor"]\nextend-select = ["tracked-accumulation"]')
    assert sorted(codes(run(capsys)[1])) == [("train.py", "TL001"), ("train.py", "TL003")]
    write_config(project, 'ignore = ["TL003"]')
    assert codes(run(capsys)[1]) == [("train.py", "TL001")]


def test_more_specific_selector_wins_within_a_layer():
    select = parse_selector("TL001")
    ignore = parse_selector("TL00")
    assert select and ignore
    enabled = enabled_codes((Selection(select=(select,), ignore=(ignore,)),))
    assert enabled == {"TL001", "TL900"}  # TL900 stays: nothing ignored it by name
    ignore_all = parse_selector("ALL")
    assert ignore_all and enabled_codes((Selection(ignore=(ignore_all,)),)) == frozenset()


def test_command_line_overrides_configuration(project, capsys):
    write_config(project, 'select = ["TL001"]\nsemantics = "strict"')
    assert run(capsys)[1]["semantics"] == "strict"
    code, document, _ = run(capsys, "--select", "TL003", "--semantics", "torch")
    assert document["semantics"] == "torch" and codes(document) == [("train.py", "TL003")]
    # --ignore on the command line removes from what the configuration selected
    code, document, _ = run(capsys, "--ignore", "TL001")
    assert code == 0 and document["diagnostics"] == []


def test_semantics_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(STRICT_ONLY)
    assert run(capsys)[1]["diagnostics"] == []
    write_config(tmp_path, 'semantics = "strict"')
    code, document, _ = run(capsys)
    assert document["semantics"] == "strict" and [d["code"] for d in document["diagnostics"]] == ["TL001"]


def test_per_file_ignores(project, capsys):
    (project / "tests").mkdir()
    (project / "tests" / "test_train.py").write_text(TL003)
    write_config(project, '[tool.tapelint.per-file-ignores]\n"tests/*" = ["tracked-accumulation"]\n"train.py" = ["TL00"]')
    assert codes(run(capsys)[1]) == []
    write_config(project, 'per-file-ignores = {"test_*.py" = ["TL003"]}')
    assert sorted(codes(run(capsys)[1])) == [("train.py", "TL001"), ("train.py", "TL003")]


def test_exclude_and_extend_exclude(project, capsys):
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(TL003)
    (project / ".venv").mkdir()
    (project / ".venv" / "lib.py").write_text(TL003)
    write_config(project, 'extend-exclude = ["legacy"]')
    assert {p for p, _ in codes(run(capsys)[1])} == {"train.py"}
    # `exclude` replaces the built-in skip list, as in ruff
    write_config(project, 'exclude = ["legacy", "train.py"]')
    assert {p for p, _ in codes(run(capsys)[1])} == {".venv/lib.py"}


def test_backward_and_tracked_functions_reach_the_analysis(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(
        "import torch\n\nfeats = encoder.encode(batch)\n\nfor step in range(3):\n"
        "    loss = (feats * 2).sum()\n    trainer.backward(loss)\n"
    )
    assert run(capsys)[1]["diagnostics"] == []
    write_config(tmp_path, 'backward-functions = ["trainer.backward"]\ntracked-functions = ["encoder.encode"]')
    assert [d["code"] for d in run(capsys)[1]["diagnostics"]] == ["TL001"]


def test_unsafe_fixes_and_report_unused_suppressions_keys(tmp_path):
    write_config(tmp_path, "unsafe-fixes = true\nreport-unused-suppressions = true")
    settings = Resolver().settings_for(str(tmp_path / "a.py"))
    assert settings.unsafe_fixes and settings.report_unused_suppressions and settings.enabled("TL901")
    overridden = Resolver(Overrides(unsafe_fixes=False, report_unused_suppressions=False))
    settings = overridden.settings_for(str(tmp_path / "a.py"))
    assert not settings.unsafe_fixes and not settings.report_unused_suppressions


def test_nearest_configuration_wins_and_tables_are_required(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, 'select = ["TL003"]')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname = 'no-tapelint-table'\n")
    (tmp_path / "pkg" / "sub").mkdir()
    write_config(tmp_path / "pkg" / "sub", 'select = ["TL001"]')
    for path in ("a.py", "pkg/b.py", "pkg/sub/c.py"):
        (tmp_path / path).write_text(TL003 + "\n" + TL001.replace("import torch\n", "", 1))
    assert sorted(codes(run(capsys)[1])) == [("a.py", "TL003"), ("pkg/b.py", "TL003"), ("pkg/sub/c.py", "TL001")]
    # --config applies one file to every checked file; --isolated ignores them all
    assert {c for _, c in codes(run(capsys, "--config", "pkg/sub/pyproject.toml")[1])} == {"TL001"}
    assert {c for _, c in codes(run(capsys, "--isolated")[1])} == {"TL001", "TL003"}


def test_settings_travel_to_worker_processes(project, capsys):
    (project / "sub").mkdir()
    (project / "sub" / "b.py").write_text(TL003)
    write_config(project / "sub", 'ignore = ["TL003"]')
    code = main(["check", "--format", "json", "-j", "2"])
    document = json.loads(capsys.readouterr()[0])
    assert code == 1 and sorted(codes(document)) == [("train.py", "TL001"), ("train.py", "TL003")]


def test_resolution_is_cached_per_directory(tmp_path):
    write_config(tmp_path, 'select = ["TL001"]')
    resolver = Resolver()
    first = resolver.config_for(str(tmp_path / "a.py"))
    (tmp_path / "pyproject.toml").unlink()
    assert resolver.config_for(str(tmp_path / "b.py")) is first
    assert isinstance(first, Config) and first.path is not None


@pytest.mark.parametrize(
    "body, expected",
    [
        ('selec = ["TL001"]', "unknown key `selec` (did you mean `select`?)"),
        ('select = ["TL999"]', "select: unknown rule or prefix 'TL999'"),
        ('select = "TL001"', "select: expected a list of strings, got a string"),
        ('ignore = [1]', "ignore: expected a list of strings, got a list"),
        ('semantics = "burn"', "semantics: expected one of 'torch', 'strict', got a string ('burn')"),
        ("unsafe-fixes = 1", "unsafe-fixes: expected true or false, got a number (1)"),
        ('per-file-ignores = ["x"]', "per-file-ignores: expected a table of glob = [rules]"),
        ('per-file-ignores = {"t/*" = ["nope"]}', "per-file-ignores.'t/*': unknown rule or prefix 'nope'"),
        ('backward-functions = ["trainer backward"]', "backward-functions: 'trainer backward' is not a dotted"),
        ('extend-exclude = "data"', "extend-exclude: expected a list of strings"),
        ("cache-dir = 1", "cache-dir: expected a non-empty string, got a number (1)"),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_configuration_is_one_line_exit_2(tmp_path, monkeypatch, capsys, body, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(TL003)
    write_config(tmp_path, body)
    code, document, err = run(capsys)
    assert code == 2 and document == {}
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tapelint: error: pyproject.toml: ") and expected in err


def test_cache_dir_key_is_relative_to_its_file_and_the_flag_and_variable_win(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TAPELINT_NO_CACHE")
    monkeypatch.delenv("TAPELINT_CACHE_DIR", raising=False)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text(TL003)
    write_config(tmp_path, 'cache-dir = "build/lint-cache"')
    monkeypatch.chdir(tmp_path / "sub")
    configured = tmp_path / "build" / "lint-cache"
    assert main(["check", "--show-settings", "a.py"]) == 0
    assert f"cache-dir                   {configured}\n" in capsys.readouterr().out
    assert run(capsys, "a.py")[0] == 1
    assert list(configured.glob("*/*.json")) and not (tmp_path / ".tapelint_cache").exists()
    monkeypatch.setenv("TAPELINT_CACHE_DIR", str(tmp_path / "from-env"))
    assert run(capsys, "a.py")[0] == 1 and (tmp_path / "from-env" / ".gitignore").is_file()
    assert run(capsys, "a.py", "--cache-dir", str(tmp_path / "flag"))[0] == 1 and (tmp_path / "flag").is_dir()
    assert main(["check", "--show-settings", "--no-cache", "a.py"]) == 0
    assert "cache-dir                   none (--no-cache)\n" in capsys.readouterr().out


def test_bad_config_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(TL003)
    (tmp_path / "other.toml").write_text("[tool.black]\n")
    code, _, err = run(capsys, "--config", "other.toml")
    assert code == 2 and err == "tapelint: error: other.toml: no [tool.tapelint] table\n"
    code, _, err = run(capsys, "--config", "missing.toml")
    assert code == 2 and "missing.toml: cannot read" in err


def test_command_line_selector_errors(project, capsys):
    code, _, err = run(capsys, "--extend-select", "TL77")
    assert code == 2 and "unknown rule or prefix 'TL77'" in err


def test_default_semantics_is_torch():
    assert Resolver().settings_for("a.py").semantics is Semantics.TORCH
