"""`walks.without_dead_releases` answers a question it was asked before from
its memo (`walks.DeadReleases`) only while the graph and the clock are as
they were: a parent added since, or a new loop pass, asks it again."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.model import CLOCK, AbstractNode, BackwardEvent, Carried, Loop, Retains, Tracked
from tapelint.analysis.state import State
from tapelint.analysis.store import NodeStore
from tapelint.analysis.walks import without_dead_releases
from tapelint.ops import Saves


def _made_in(loop: Loop, op: str) -> AbstractNode:
    return AbstractNode(cst.Name(op), (loop,), Tracked.YES, False, Saves.TENSORS, op)


def _released_by_the_last_iteration(store: NodeStore, loop: Loop) -> tuple[State, AbstractNode, AbstractNode]:
    """`y` bound to this iteration's tensor; the last iteration's `exp` released."""
    earlier, bound = _made_in(loop, "exp"), _made_in(loop, "mul")
    event = BackwardEvent(cst.Call(cst.Name("backward")), [earlier], Retains.NO, (loop,), 0, store.module,
                          "loss.backward()")
    return State({"y": frozenset({bound})}, {(earlier, loop): event}, {}), earlier, bound


def test_a_parent_added_since_the_question_was_answered_is_walked() -> None:
    store = NodeStore(cst.parse_module(""))
    loop = store.loop(cst.Name("for"), label="for")
    state, earlier, bound = _released_by_the_last_iteration(store, loop)
    assert not without_dead_releases(state, (loop,), store).released  # nothing bound reaches it
    bound.edges.append(Carried(earlier, loop))  # as the store grows a node: it counts the change
    store.changes += 1
    assert without_dead_releases(state, (loop,), store).released == state.released


def test_a_new_pass_walks_again_and_stamps_what_it_reads() -> None:
    store = NodeStore(cst.parse_module(""))
    loop = store.loop(cst.Name("for"), label="for")
    state, _, bound = _released_by_the_last_iteration(store, loop)
    without_dead_releases(state, (loop,), store)
    assert bound.read == CLOCK.now
    now = CLOCK.tick()
    assert not without_dead_releases(state, (loop,), store).released
    assert bound.read == now
