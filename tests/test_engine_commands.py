"""`tapelint run` and `tapelint confirm` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapelint import engine_commands
from tapelint.cli import main

pytest.importorskip("numpy")

FIXTURES = Path(__file__).parents[1] / "fixtures"
HOISTED = str(FIXTURES / "tl001_hoisted_features.py")
CLEAN = str(FIXTURES / "neg_tl001_fix_a_detach.py")


def test_confirm_json_attaches_a_confirmation_to_every_diagnostic(capsys):
    code = main(["confirm", HOISTED, CLEAN, "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 1
    (diagnostic,) = document["diagnostics"]
    confirmation = diagnostic["confirmation"]
    assert diagnostic["code"] == "TL001" and confirmation["status"] == "confirmed"
    assert confirmation["semantics"] == "torch"
    assert confirmation["runtime"]["line"] == 14 and confirmation["runtime"]["node_line"] == 10
    assert confirmation["runtime"]["error"].startswith("Trying to backward through the graph a second time")


def test_confirm_text_under_strict_names_the_node_id(capsys):
    code = main(["confirm", HOISTED, "--semantics", "strict"])
    out = capsys.readouterr().out
    assert code == 1
    assert "TL001 [confirmed]" in out and "NodeId(2)" in out and "1 confirmed" in out


def test_confirm_a_clean_file_runs_nothing(capsys):
    assert main(["confirm", CLEAN]) == 0
    assert "nothing to run" in capsys.readouterr().out


def test_confirm_reports_a_refuted_diagnostic(tmp_path, capsys):
    """A program that stops before the predicted failure: the diagnostic is
    real, but this run cannot show it, so it is not confirmed."""
    program = Path(HOISTED).read_text(encoding="utf-8").replace("for step in range(3):", "for step in range(1):")
    path = tmp_path / "one_step.py"
    path.write_text(program, encoding="utf-8")
    main(["confirm", str(path), "--format", "json"])
    (diagnostic,) = json.loads(capsys.readouterr().out)["diagnostics"]
    assert diagnostic["confirmation"]["status"] == "refuted"


def test_run_reports_the_failing_call(capsys):
    code = main(["run", HOISTED, "--semantics", "strict", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (report["status"], report["line"], report["node_id"]) == ("error", 14, 2)


def test_without_numpy_the_engine_commands_say_so(monkeypatch, capsys):
    monkeypatch.setattr(engine_commands, "engine_available", lambda: False)
    assert main(["run", HOISTED]) == 2
    assert main(["confirm", HOISTED]) == 2
    err = capsys.readouterr().err
    assert err.count("pip install -e '.[engine]'") == 2 and "Traceback" not in err


def test_confirm_reads_the_lint_cache_like_check_and_no_cache_turns_it_off(tmp_path, capsys, monkeypatch):
    """`confirm` lints first: with a cache directory its lint results are stored there
    (and the verdicts are those of an uncached run); `--no-cache` writes nothing."""
    monkeypatch.delenv("TAPELINT_NO_CACHE", raising=False)
    cached, uncached = tmp_path / "cached", tmp_path / "uncached"
    verdicts = []
    for extra in (["--cache-dir", str(cached)], ["--cache-dir", str(cached)],
                  ["--cache-dir", str(uncached), "--no-cache"]):
        assert main(["confirm", HOISTED, "--format", "json", *extra]) == 1
        verdicts.append([(d["code"], d["confirmation"]["status"])
                         for d in json.loads(capsys.readouterr().out)["diagnostics"]])
    assert verdicts[0] == verdicts[1] == verdicts[2] == [("TL001", "confirmed")]
    assert cached.is_dir() and any(cached.rglob("*"))
    assert not uncached.exists()
