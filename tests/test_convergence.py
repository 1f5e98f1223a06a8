"""A loop's fixed point (`run_loop`, `NodeStore.grew`): a pass that grew the
graph only where it had not read it yet is the last one, and skipping the
pass that would have confirmed it changes no result. Every fixture and every
file of every fixture project lints the same with the confirming pass forced
(the criterion before it existed) as without, under both semantics; so it
does with each later shortcut taken back (heads compared guard by guard, or
before the `for` target is bound; each step also run on its own)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from fixture_spec import FIXTURES_DIR, PROFILES
from tapelint.analysis.driver import analyze_module
from tapelint.analysis.parsing import parse_module
from tapelint.analysis.project import CACHE
from tapelint.analysis.store import LoopRun, NodeStore
from tapelint.diagnostics import Semantics
from tapelint.settings import Settings
from tapelint.suppressions import lint_module

FILES = sorted(FIXTURES_DIR.glob("*.py")) + sorted((FIXTURES_DIR / "projects").rglob("*.py"))


def _every_pass_dirty(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass that grew the graph is never the last: the criterion before."""
    begin_pass = NodeStore.begin_pass

    def dirty(self: NodeStore, run: LoopRun) -> None:
        begin_pass(self, run)
        run.reread = True

    monkeypatch.setattr(NodeStore, "begin_pass", dirty)


def _lint(path: Path, settings: Settings) -> str:
    CACHE.entries.clear()
    CACHE.chars = 0
    return repr(lint_module(path.read_text(encoding="utf-8"), str(path), settings))


def _settings(profile: str) -> Settings:
    return Settings(semantics=Semantics(profile), report_unused_suppressions=True)


@functools.cache
def _settled(profile: str) -> dict[Path, str]:
    """Every fixture file's lint as the analysis runs (shared by the comparisons below)."""
    return {path: _lint(path, _settings(profile)) for path in FILES}


def _differing(profile: str, monkeypatch: pytest.MonkeyPatch, undo: Callable[[pytest.MonkeyPatch], None]) -> list[Path]:
    """The fixture files that lint otherwise once `undo` has taken a shortcut back."""
    settled = _settled(profile)
    with monkeypatch.context() as patched:
        undo(patched)
        compared = {path: _lint(path, _settings(profile)) for path in FILES}
    return [path for path in FILES if settled[path] != compared[path]]


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_with_the_confirming_pass(profile, monkeypatch):
    settings = Settings(semantics=Semantics(profile), report_unused_suppressions=True)
    passes = [0]
    begin_pass = NodeStore.begin_pass

    def counted(self: NodeStore, run: LoopRun) -> None:
        passes[0] += 1
        begin_pass(self, run)

    monkeypatch.setattr(NodeStore, "begin_pass", counted)
    settled = {path: _lint(path, settings) for path in FILES}
    settled_passes, passes[0] = passes[0], 0
    _every_pass_dirty(monkeypatch)
    confirmed = {path: _lint(path, settings) for path in FILES}
    assert [path for path in FILES if settled[path] != confirmed[path]] == []
    assert settled_passes < 0.85 * passes[0]  # the comparison bites: that many passes were skipped


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_when_loop_heads_must_have_the_same_guards(profile, monkeypatch):
    """A loop head whose guards differ from the last one's only by facts
    every path there has ends the loop (`state._same_guards`): a further pass
    drops no value the last did not. Linted with heads compared guard by
    guard (the criterion before), every fixture gives the same."""
    assert _differing(profile, monkeypatch, _guard_by_guard) == []


def test_a_head_whose_guards_differ_only_by_the_paths_facts_ends_the_loop(monkeypatch):
    # Every path in the loops has `real_data`. At the inner loop's head in the
    # outer loop's second pass, the release of an earlier outer iteration's
    # `loss` is guarded by `real_data` on one side of the comparison and not
    # on the other: it excludes no path there, so a third pass would run the same.
    source = ("import torch\n\nmodel = torch.nn.Linear(3, 1)\nif real_data:\n"
              "    for stage, steps in enumerate([10, 20]):\n        for k in range(steps):\n"
              "            with ctx:\n                loss = model(torch.randn(2, 3)).sum()\n"
              "            loss.backward()\n")
    # (without: the inner loop's second run takes a third pass)
    assert _passes_both_ways(source, monkeypatch, _guard_by_guard) == ([2, 2, 2], [2, 3, 2])


def _guard_by_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heads compared guard by guard: the criterion before."""
    from tapelint.analysis import state as lattice

    monkeypatch.setattr(lattice, "_same_guards", lambda a, b, facts: False)


def _without_rebinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heads compared as they are, not once the `for` target is bound: the criterion before."""
    from tapelint.analysis.interp import statements

    run_loop = statements.run_loop

    def compared_unbound(*args, **kwargs):
        kwargs.pop("rebinds", None)
        return run_loop(*args, **kwargs)

    monkeypatch.setattr(statements, "run_loop", compared_unbound)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_when_heads_are_compared_before_the_target_is_bound(profile, monkeypatch):
    assert _differing(profile, monkeypatch, _without_rebinds) == []


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_with_each_step_also_run_on_its_own(profile, monkeypatch):
    """`driver.runs_only_as_a_step` (`tests/test_steps.py`) taken back."""
    from tapelint.analysis import driver

    def each_step_run_on_its_own(patched: pytest.MonkeyPatch) -> None:
        patched.setattr(driver, "runs_only_as_a_step", lambda fn, hook, method: False)

    assert _differing(profile, monkeypatch, each_step_run_on_its_own) == []


def test_heads_the_same_once_the_target_is_bound_end_the_loop(monkeypatch):
    # The head of the `tracker` loop keeps the last iteration's `images` guarded
    # by `tracker.name == "wandb"`; binding `tracker` forgets that first thing.
    source = ("import torch\n\nw = torch.randn(3, requires_grad=True)\nfor epoch in range(3):\n"
              "    loss = (w * 2).sum()\n    loss.backward()\n    for tracker in trackers:\n"
              "        if tracker.name == \"wandb\":\n            images = [torch.randn(3)]\n"
              "            tracker.log(images)\n")
    # (without: the inner loop's run in the outer loop's first pass takes a third)
    assert _passes_both_ways(source, monkeypatch, _without_rebinds) == ([2, 2, 2], [3, 2, 2])


def _passes_both_ways(source: str, monkeypatch: pytest.MonkeyPatch, undo: Callable[[pytest.MonkeyPatch], None]
                      ) -> tuple[list[int], list[int]]:
    """`_passes` as the analysis runs, and once `undo` has taken a shortcut back."""
    with monkeypatch.context() as patched:
        settled = _passes(source, patched)
    with monkeypatch.context() as patched:
        undo(patched)
        return settled, _passes(source, patched)


def _passes(source: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many passes each run of a loop took, in the order the runs ended."""
    counts: list[int] = []
    begin_run, begin_pass, end_run = NodeStore.begin_run, NodeStore.begin_pass, NodeStore.end_run
    running: list[int] = []

    def counting_run(self: NodeStore) -> LoopRun:
        running.append(0)
        return begin_run(self)

    def counting_pass(self: NodeStore, run: LoopRun) -> None:
        running[-1] += 1
        begin_pass(self, run)

    def counting_end(self: NodeStore) -> None:
        counts.append(running.pop())
        end_run(self)

    monkeypatch.setattr(NodeStore, "begin_run", counting_run)
    monkeypatch.setattr(NodeStore, "begin_pass", counting_pass)
    monkeypatch.setattr(NodeStore, "end_run", counting_end)
    analyze_module(parse_module(source), Settings())
    return counts


HEADER = "import torch\n\nw = torch.randn(3, 3, requires_grad=True)\n\n\ndef train(xs):\n"


def test_a_loop_that_reads_only_what_it_made_ends_after_its_second_pass(monkeypatch):
    # The second pass gives `y` and `loss` the parents of a later iteration, and
    # the walk of `loss` reads them after that: a third pass would run the same.
    source = HEADER + "    for x in xs:\n        y = (w @ x).tanh()\n        loss = y.sum()\n        loss.backward()\n"
    assert _passes(source, monkeypatch) == [2]


def test_a_walk_that_read_a_node_before_it_grew_asks_for_another_pass(monkeypatch):
    # The walk of `loss` reads the previous iteration's `h` (its parents of the
    # first iteration only); `h` then gains a later iteration's parents: what the
    # walk finds behind it may change, so the loop is run again.
    source = HEADER + ("    h = w @ xs[0]\n    for x in xs:\n        loss = (h * x).sum()\n"
                       "        loss.backward(retain_graph=True)\n        h = (h * 2).tanh()\n")
    assert _passes(source, monkeypatch) == [3]


def test_a_read_inside_a_nested_loop_is_that_loops_own(monkeypatch):
    # The inner loop reads and grows its own nodes across its passes; the outer
    # loop read nothing that grew after its read, so both end after two passes
    # (the inner loop runs once per outer pass).
    source = HEADER + ("    for epoch in range(3):\n        for x in xs:\n            y = (w @ x).tanh()\n"
                       "            loss = y.sum()\n            loss.backward()\n")
    assert _passes(source, monkeypatch) == [2, 2, 2]


def test_what_a_loop_did_not_make_carries_to_itself_and_what_it_made_to_stand_ins():
    """`store.carry` looks into a tuple once per loop, and a tuple (or a
    binding) holding nothing the loop made stays the same object: a join at
    the loop's head then sees it unchanged."""
    from tapelint.analysis import state as lattice
    from tapelint.analysis.model import AbstractNode, Carried, Tracked, tuple_of
    from tapelint.ops import Saves

    module = parse_module("for batch in loader:\n    pass\n")
    store = NodeStore(module)
    loop = store.loop(module.body[0], label="for")
    before = AbstractNode(module.body[0], (), Tracked.YES, False, Saves.UNKNOWN, "exp")
    inside = AbstractNode(module.body[0], (loop,), Tracked.YES, False, Saves.UNKNOWN, "exp")
    old = tuple_of([frozenset({before}), frozenset({before})])
    made = tuple_of([frozenset({before}), frozenset({inside})])
    assert store.carry(old, loop) is old
    carried = store.carry(made, loop)
    assert carried is not made and carried.items[0] == frozenset({before})
    [stand_in] = carried.items[1]
    assert isinstance(stand_in, Carried) and stand_in.node is inside
    assert store.carry(made, loop) is carried
    start = lattice.State({"pair": frozenset({old}), "h": frozenset({made})}, {}, {})
    after = lattice.carry(start, loop, store.carry)
    assert after.env["pair"] is start.env["pair"]
    assert after.env["h"] == frozenset({carried}) and stand_in.name == "h"
