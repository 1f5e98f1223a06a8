"""The thin parse (`tapelint.analysis.thin`) loses nothing: every fixture and
every file of every fixture project, linted with the thin parse forced on
(whatever its size) and with it off, gives the same result — diagnostics,
related locations, fixes — under both semantics and with unused suppressions
reported. Corpus projects: `benchmarks/bench_thin.py`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fixture_spec import FIXTURES_DIR, PROFILES
from tapelint import lint
from tapelint.analysis import thin
from tapelint.analysis.project import CACHE
from tapelint.diagnostics import Semantics
from tapelint.settings import Settings
from tapelint.suppressions import lint_module

FILES = sorted(FIXTURES_DIR.glob("*.py")) + sorted((FIXTURES_DIR / "projects").rglob("*.py"))


def _lint(path: Path, settings: Settings) -> str:
    CACHE.entries.clear()  # no tree from another lint: each file is parsed as if first
    CACHE.chars = 0
    return repr(lint_module(path.read_text(encoding="utf-8"), str(path), settings))


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_thin_and_whole(profile, monkeypatch):
    settings = Settings(semantics=Semantics(profile), report_unused_suppressions=True)
    monkeypatch.setattr(thin, "ENABLED", False)
    whole = {path: _lint(path, settings) for path in FILES}
    monkeypatch.setattr(thin, "ENABLED", True)
    monkeypatch.setattr(thin, "MIN_CHARS", 0)
    decided_thin = 0
    for path in FILES:
        CACHE.entries.clear()
        CACHE.chars = 0
        decided_thin += lint._quick_finds_nothing(path.read_text(encoding="utf-8"), str(path), settings)
        found = _lint(path, settings)
        if found != whole[path]:
            # The whole lint itself may word a finding by which of two equivalent
            # hazards the analysis meets first, an order that depends on what the
            # process allocated before: the whole lint, now, must agree.
            monkeypatch.setattr(thin, "ENABLED", False)
            assert found == _lint(path, settings), path
            monkeypatch.setattr(thin, "ENABLED", True)
    assert decided_thin >= 20  # the comparison bites: that many files were decided by their thin parse


SOURCE = '''\
import torch

LIMIT = 3


def helper(x):
    return x * 2


def unrelated(y):
    return y + 1


def step(loss):
    loss.backward()


def train(model, data):
    for x in data:
        loss = model(helper(x)).sum()
        step(loss)
        step(loss)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x

    def describe(self):
        return "net"


class Report:
    def show(self):
        print("report")
'''


def test_thin_keeps_seeds_callers_callees_and_module_code_in_place(monkeypatch):
    monkeypatch.setattr(thin, "MIN_CHARS", 0)
    text = thin.thin_source(SOURCE, Settings())
    assert text is not None
    kept, lines = text.splitlines(), SOURCE.splitlines()
    assert len(kept) == len(lines)
    for number, line in enumerate(kept):  # every line is the original or emptied (`pass` for a method)
        assert line in (lines[number], "", line[: len(line) - len(line.lstrip())] + "pass")
    names = {node.name for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    # step is a seed, train calls it (a caller), helper is called by train (a callee)
    assert {"step", "train", "helper"} <= names
    assert "unrelated" not in names and "Report" not in names and "describe" not in names
    assert "LIMIT = 3" in text and "import torch" in text


def test_a_class_whose_every_method_goes_still_parses(monkeypatch):
    monkeypatch.setattr(thin, "MIN_CHARS", 0)
    source = "class A:\n    def f(self):\n        return 1\n\n\ndef g():\n    A().f().backward()\n"
    assert thin.thin_source(source, Settings()) is None  # g names f: everything is kept
    text = thin.thin_source(source.replace("A().f()", "A()"), Settings())
    assert text is not None and "    pass\n" in text
    ast.parse(text)
