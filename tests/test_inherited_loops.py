"""The inlining budget pays for distinct calls, not for re-runs of one call
in a loop's passes; a body that makes no call is interpreted even past the
depth bound, so a rollout stored four calls deep (`learn -> collect ->
record -> push`) is what the loop reads."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import libcst as cst

from tapelint.analysis import driver
from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.findings import HazardKind
from tapelint.lint import lint_source
from tapelint.settings import Settings


def analysed(code: str) -> ModuleAnalysis:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis


def hoisted(code: str) -> list[str]:
    return [h.value for h in analysed(code).results() if h.kind is HazardKind.HOISTED]


def helpers_loop(count: int, cached: str) -> str:
    helpers = "\n".join(f"def note{i}(v):\n    return v\n" for i in range(count))
    calls = "\n".join(f"            note{i}(step)" for i in range(count))
    return f"""
import torch
import torch.nn as nn

{helpers}
def compute(v):
    return (net(torch.randn(3)) * v).sum()

net = nn.Linear(3, 3)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
cached = {cached}
for epoch in range(2):
    for batch in range(2):
        for step in range(2):
{calls}
            loss = compute(cached)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_a_call_rerun_by_loop_passes_is_charged_once() -> None:
    analysis = analysed(helpers_loop(1, "torch.randn(3)"))
    assert driver.INLINE_BUDGET - analysis.inline_budget == 2  # note0(step), compute(cached)


def test_a_hoisted_value_behind_many_helpers_is_found_and_its_detached_twin_is_not() -> None:
    assert hoisted(helpers_loop(150, "net(torch.randn(3))")) == ["cached"]
    assert hoisted(helpers_loop(150, "torch.randn(3)")) == []


DEEP_STORE = """
    import torch
    import torch.nn as nn

    class Store:
        def __init__(self):
            self.kept = []

        def push(self, items):
            self.kept += items

    class Trainer:
        def __init__(self):
            self.net = nn.Linear(3, 3)
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
            self.store = Store()

        def record(self, items):
            self.store.push(items)

        def make(self):
            return [{stored}]

        def collect(self):
            self.record(self.make())

        def learn(self):
            self.collect()
            for epoch in range(3):
                for old in self.store.kept:
                    loss = (self.net(torch.randn(3)) - old).pow(2).sum()
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()

    Trainer().learn()
"""


def test_a_call_free_body_past_the_depth_bound_still_stores() -> None:
    assert hoisted(DEEP_STORE.format(stored="self.net(torch.randn(3))")) != []
    assert hoisted(DEEP_STORE.format(stored="self.net(torch.randn(3)).detach()")) == []


def test_a_body_that_calls_on_past_the_depth_bound_is_not_interpreted() -> None:
    # `push` now calls a helper: the depth bound applies, the stored values are unknown.
    code = DEEP_STORE.replace("self.kept += items", "self.kept += list(items)")
    assert hoisted(code.format(stored="self.net(torch.randn(3))")) == []


BASE_TRAINER = """
    import torch

    class BaseTrainer:
        def __init__(self):
            self.store = []

        def learn(self):
            self.collect()
            for epoch in range(3):
                for old in self.store:
                    loss = self.loss(old)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
"""

SUBCLASS = """
    import torch
    import torch.nn as nn
    from base import BaseTrainer

    class PPOTrainer(BaseTrainer):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(3, 3)
            self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

        def collect(self):
            for t in range(2):
                {collect}
                self.store.append(logp)

        def loss(self, old):
            return (self.net(torch.randn(3)).log_softmax(-1) - old).exp().mean()
"""


def lint_subclass(tmp_path: Path, collect: str) -> list:
    (tmp_path / "base.py").write_text(textwrap.dedent(BASE_TRAINER), encoding="utf-8")
    path = tmp_path / "ppo.py"
    path.write_text(textwrap.dedent(SUBCLASS.format(collect=collect)), encoding="utf-8")
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings())
    assert not result.errors, result.errors
    return list(result.diagnostics)


def test_an_inherited_loop_of_another_file_reports_at_the_hook_with_the_base_backward_related(tmp_path: Path) -> None:
    found = lint_subclass(tmp_path, "logp = self.net(torch.randn(3)).log_softmax(-1)")
    assert [(d.code, d.range.start.line) for d in found] == [("TL001", 14)]
    # the backward runs in base.py's learn(): a related location there, and the
    # subclass's base class in its header as where this file inherits it
    related = {(r.role.value, os.path.basename(r.path), r.range.start.line) for r in found[0].related}
    assert ("fails-at", "base.py", 14) in related
    assert ("fails-at", "ppo.py", 6) in related


def test_an_inherited_loop_over_detached_rollouts_is_silent(tmp_path: Path) -> None:
    assert lint_subclass(tmp_path, "logp = self.net(torch.randn(3)).log_softmax(-1).detach()") == []
