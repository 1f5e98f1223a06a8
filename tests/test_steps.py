"""Training steps known before they run (`driver.runs_only_as_a_step`): a
framework hook, or a module function without a loop of its own that calls
`.backward()`, is run only as the body of its implicit loop, without the run
on its own that would have found it walks a graph (every fixture lints the
same as with that run: `tests/test_convergence.py`)."""

from __future__ import annotations

import pytest

from tapelint.analysis import driver
from tapelint.analysis.parsing import parse_module
from tapelint.settings import Settings


def _runs(source: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Each function run on its own: its name, and whether as an implicit loop."""
    runs: list[tuple[str, bool]] = []
    run_function = driver.ModuleAnalysis._run_function

    def recorded(self, fn, owner, initial, collect_self, implicit_loop, hook=False):
        runs.append((fn.name.value, implicit_loop))
        return run_function(self, fn, owner, initial, collect_self, implicit_loop, hook)

    monkeypatch.setattr(driver.ModuleAnalysis, "_run_function", recorded)
    driver.analyze_module(parse_module(source), Settings())
    return runs


def test_a_step_function_that_walks_a_graph_itself_runs_only_as_its_loop(monkeypatch):
    source = ("import torch\n\nw = torch.randn(3, requires_grad=True)\n\n\n"
              "def step(x):\n    loss = (w * x).sum()\n    loss.backward()\n\n\n"
              "def evaluate(x):\n    return (w * x).sum().item()\n")
    assert _runs(source, monkeypatch) == [("evaluate", False), ("step", True)]


def test_a_function_that_walks_a_graph_through_a_helper_is_found_a_step_by_its_run(monkeypatch):
    source = ("import torch\n\nw = torch.randn(3, requires_grad=True)\n\n\n"
              "def walk(loss):\n    loss.backward()\n\n\n"
              "def step(x):\n    walk((w * x).sum())\n")
    assert _runs(source, monkeypatch) == [("step", False), ("step", True)]


def test_a_framework_hook_runs_only_as_its_loop(monkeypatch):
    source = ("import torch\nimport lightning as L\n\n\nclass Lit(L.LightningModule):\n"
              "    def __init__(self):\n        super().__init__()\n        self.net = torch.nn.Linear(3, 1)\n\n"
              "    def training_step(self, batch, index):\n        return self.net(batch).sum()\n\n"
              "    def helper(self, batch):\n        return self.net(batch).sum()\n")
    runs = _runs(source, monkeypatch)
    assert ("training_step", False) not in runs and ("training_step", True) in runs
    assert ("helper", False) in runs and ("helper", True) not in runs
