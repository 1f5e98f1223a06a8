"""The result cache never changes a result: a multi-file project checked
cold, warm, after editing an imported module, after adding a file an
import now resolves to, and with a damaged cache, reports byte for byte
what `--no-cache` reports, and re-lints exactly the files whose inputs
changed. Concurrent runs sharing one cache leave it whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import run

from tapelint import runner
from tapelint.cache import ResultCache, cache_directory, decode, encode
from tapelint.diagnostics import FileResult
from tapelint.runner import lint_files
from tapelint.settings import Settings

MODELS = "import torch\n\n\ndef make_loss(w):\n    return (w * w).sum()\n"
TRAIN = (
    "import torch\nfrom models import make_loss\nfrom helpers import scale\n\n"
    "w = torch.ones(2, requires_grad=True)\nloss = make_loss(w)\nloss.backward()\nloss.backward()\n"
)
OTHER = "import torch\nw = torch.ones(2, requires_grad=True)\nl = (w * 2).sum()\nl.backward()\nl.backward()\n"
PACKAGE_INIT = "from .nets import Net\n"
NETS = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
       "        self.fc = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n"
EVALUATE = (
    "import torch\nfrom pkg import Net\n\nnet = Net()\ntotal = 0\nfor x in [torch.ones(2)] * 3:\n"
    "    loss = net(x).sum()\n    loss.backward()\n    total += loss\nprint(total)\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TAPELINT_NO_CACHE")
    monkeypatch.delenv("TAPELINT_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    files = {"models.py": MODELS, "train.py": TRAIN, "other.py": OTHER, "pkg/__init__.py": PACKAGE_INIT,
             "pkg/nets.py": NETS, "evaluate.py": EVALUATE, "notes.py": "x = 1\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def linted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files each run actually sends to workers (the rest come from the cache)."""
    seen: list[str] = []
    real = runner._in_workers

    def spy(files, *args, **kwargs):
        seen.extend(os.path.basename(f) for f in files)
        return real(files, *args, **kwargs)

    monkeypatch.setattr(runner, "_in_workers", spy)
    return seen


def outputs(capsys) -> dict[str, tuple[int, str]]:
    """Each output format that matters, cached and not: (exit code, stdout)."""
    found = {}
    for fmt in ("json", "text"):
        for cached in (True, False):
            code, out, _ = run(capsys, "check", ".", "--format", fmt, *(() if cached else ("--no-cache",)))
            found[(fmt, cached)] = (code, out)
    return found


def assert_same_as_uncached(found: dict) -> None:
    for fmt in ("json", "text"):
        assert found[(fmt, True)] == found[(fmt, False)], fmt


def test_cold_warm_and_edited_runs_report_what_an_uncached_run_reports(project: Path, capsys, linted) -> None:
    code, cold, _ = run(capsys, "check", ".", "--format", "json")
    assert sorted(linted) == ["__init__.py", "evaluate.py", "models.py", "nets.py", "notes.py", "other.py",
                              "train.py"]
    assert code == 1 and {d["path"] for d in json.loads(cold)["diagnostics"]} >= {"train.py", "other.py"}
    linted.clear()
    assert run(capsys, "check", ".", "--format", "json")[1] == cold
    assert linted == []  # warm: nothing linted again
    before_edit = outputs(capsys)
    assert_same_as_uncached(before_edit)

    # Editing an imported module re-lints it and its importers, nothing else.
    (project / "models.py").write_text(MODELS.replace("return (w * w).sum()", "return float((w * w).sum())"))
    linted.clear()
    run(capsys, "check", ".", "--format", "json")
    assert sorted(linted) == ["models.py", "train.py"]
    after_edit = outputs(capsys)
    assert_same_as_uncached(after_edit)
    assert after_edit[("json", False)] != before_edit[("json", False)]  # the edit changed the result

    # A transitive import: editing `pkg/nets.py` re-lints `evaluate.py` (through `pkg/__init__.py`).
    (project / "pkg" / "nets.py").write_text(NETS.replace("nn.Linear(2, 2)", "None"))
    linted.clear()
    run(capsys, "check", ".", "--format", "json")
    assert sorted(linted) == ["__init__.py", "evaluate.py", "nets.py"]
    assert_same_as_uncached(outputs(capsys))

    # A file an import did not resolve to before (`helpers` was a library name) now exists.
    (project / "helpers.py").write_text("def scale(x):\n    return x\n")
    linted.clear()
    run(capsys, "check", ".", "--format", "json")
    assert sorted(linted) == ["helpers.py", "train.py"]
    assert_same_as_uncached(outputs(capsys))


def test_a_path_given_differently_reports_its_own_spelling(project: Path, capsys, monkeypatch) -> None:
    (project / "pyproject.toml").write_text("[tool.tapelint]\n")  # the same settings from either directory
    run(capsys, "check", ".", "--format", "json", "--cache-dir", str(project / "c"))
    monkeypatch.chdir(project.parent)
    spelled = f"{project.name}/other.py"
    found = run(capsys, "check", spelled, "--format", "json", "--cache-dir", str(project / "c"))
    assert {d["path"] for d in json.loads(found[1])["diagnostics"]} == {spelled}
    assert found == run(capsys, "check", spelled, "--format", "json", "--no-cache")


def test_settings_and_semantics_are_part_of_the_key(project: Path, capsys, linted) -> None:
    run(capsys, "check", ".", "--format", "json")
    linted.clear()
    strict = run(capsys, "check", ".", "--format", "json", "--semantics", "strict")
    assert len(linted) == 7
    assert strict == run(capsys, "check", ".", "--format", "json", "--semantics", "strict", "--no-cache")
    linted.clear()
    run(capsys, "check", ".", "--format", "json", "--ignore", "TL004")
    assert len(linted) == 7


def test_a_damaged_or_foreign_entry_is_ignored_and_rewritten(project: Path, capsys, linted) -> None:
    clean = run(capsys, "check", ".", "--format", "json", "--no-cache")
    run(capsys, "check", ".", "--format", "json")
    entries = sorted((project / ".tapelint_cache").glob("*/*.json"))
    assert len(entries) == 7
    damages = [b"", b"{", b"[1, 2]", b"\xff\xfe garbage", json.dumps({"fingerprint": "other"}).encode()]
    for entry, damage in zip(entries, damages):
        entry.write_bytes(damage)
    wrong = json.loads(entries[5].read_text())
    wrong["result"]["diagnostics"] = "not a list"
    entries[5].write_text(json.dumps(wrong))
    facts = json.loads(entries[6].read_text())
    facts["facts"] = ["ab"]  # two characters, not a [path, state] pair
    entries[6].write_text(json.dumps(facts))
    linted.clear()
    assert run(capsys, "check", ".", "--format", "json") == clean
    assert len(linted) == 7
    linted.clear()
    assert run(capsys, "check", ".", "--format", "json") == clean
    assert linted == []  # every damaged entry was rewritten whole


def test_concurrent_runs_sharing_a_cache_leave_whole_entries(project: Path) -> None:
    env = {**os.environ, "TAPELINT_CACHE_DIR": str(project / "shared")}
    command = [sys.executable, "-m", "tapelint", "check", ".", "--format", "json", "-j", "2"]
    expected = subprocess.run([*command, "--no-cache"], capture_output=True, env=env, cwd=project).stdout
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=project) for _ in range(4)]
    assert all(p.communicate(timeout=300)[0] == expected for p in runs)
    entries = list((project / "shared").glob("*/*.json"))
    assert len(entries) == 7 and all(json.loads(e.read_text())["result"] is not None for e in entries)
    assert not [p for p in (project / "shared").rglob("*") if p.name.startswith(".tmp-")]
    assert (project / "shared" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_cache_that_cannot_be_written_changes_nothing(project: Path, capsys) -> None:
    (project / "blocked").write_text("a file where the cache directory would be")
    clean = run(capsys, "check", ".", "--format", "json", "--no-cache")
    assert run(capsys, "check", ".", "--format", "json", "--cache-dir", "blocked") == clean


def test_a_long_lived_process_reuses_results_until_an_import_changes(project: Path, monkeypatch) -> None:
    cache = ResultCache(str(project / "cache"))
    lints: list[str] = []
    real = runner._read_and_lint_recorded
    monkeypatch.setattr(runner, "_read_and_lint_recorded", lambda path, settings: lints.append(path) or real(path, settings))
    first = runner.lint_one("train.py", Settings(), cache)
    assert first.result.diagnostics and lints == ["train.py"]
    assert runner.lint_one("train.py", Settings(), cache) == first and lints == ["train.py"]
    (project / "models.py").write_text(MODELS + "\n# edited\n")
    cache.forget_disk()
    assert runner.lint_one("train.py", Settings(), cache) == first  # same findings, linted again:
    assert lints == ["train.py", "train.py"]


def test_results_with_errors_are_not_cached(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(b"x = 1\0\n")
    cache = ResultCache(str(tmp_path / "cache"))
    first = lint_files([str(tmp_path / "bad.py")], Settings(), 1, cache)
    assert first.results[0].errors
    assert not list((tmp_path / "cache").glob("*/*.json"))


def test_the_codec_round_trips_results_with_fixes_related_locations_and_warnings(tmp_path: Path) -> None:
    source = OTHER + "y = 1  # noqa: XYZ, TL999\n"
    (tmp_path / "t.py").write_text(source)
    result = lint_files([str(tmp_path / "t.py")], Settings(), 1).results[0]
    assert result.diagnostics[0].fixes and result.diagnostics[0].related and result.warnings
    assert decode(FileResult, json.loads(json.dumps(encode(result)))) == result


def test_where_the_cache_lives() -> None:
    assert cache_directory("flag", "configured", "/root", {"TAPELINT_CACHE_DIR": "env"}) == os.path.abspath("flag")
    assert cache_directory(None, "/configured", "/root", {"TAPELINT_CACHE_DIR": "env"}) == os.path.abspath("env")
    assert cache_directory(None, "/configured", "/root", {}) == "/configured"
    assert cache_directory(None, None, "/root", {}) == "/root/.tapelint_cache"


@pytest.mark.parametrize("changed", ["python", "libcst"])
def test_results_of_another_python_or_libcst_are_not_reused(monkeypatch, changed):
    """CPython's `compile()` judges TL900 and libcst parses and places every
    node: a cache shared by jobs on two Pythons must not share verdicts."""
    from tapelint import cache

    cache.fingerprint.cache_clear()
    before = cache.fingerprint()
    if changed == "python":
        monkeypatch.setattr(cache.sys, "version", cache.sys.version + " (another build)")
    else:
        monkeypatch.setattr(cache.importlib.metadata, "version", lambda name: "0.0.0")
    cache.fingerprint.cache_clear()
    try:
        assert cache.fingerprint() != before
    finally:
        monkeypatch.undo()
        cache.fingerprint.cache_clear()
    assert cache.fingerprint() == before
