"""A module's train/eval mode as a path fact, and the grad mode it decides.

`model.eval()` sets `model.training` to False and `model.train()` (or
`train(True)`) to True: the path then knows that attribute, as it knows a
tested condition (`analysis/paths.py`), and the fact crosses into methods
called on the object like any fact about a stable attribute. Code that
switches gradients with the mode — `with torch.set_grad_enabled(
self.model.training):` in pytorch-maml's `get_outer_loss`, reached from an
evaluation loop right after `self.model.eval()` — is decided by it: no graph
in evaluation, a graph in training. A switch the path knows nothing about
keeps gradients on, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes, paths
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.paths import Fact
from tapelint.analysis.state import State
from tapelint.analysis.torch_api import literal_bool


def note_mode_switch(call: cst.Call, state: State) -> None:
    """After `X.eval()` / `X.train()` / `X.train(flag)`, the path knows `X.training`
    (a non-literal flag: only that what it knew is gone)."""
    func = call.func
    if type(func) is not cst_nodes.Attribute or func.attr.value not in ("eval", "train"):
        return
    owner = dotted_name(func.value)
    if owner is None or len(call.args) > 1 or (func.attr.value == "eval" and call.args):
        return
    key = owner + ".training"
    state.rebound(key)
    if func.attr.value == "eval":
        mode: Optional[bool] = False
    else:
        mode = literal_bool(call.args[0].value) if call.args else True
    if mode is not None:
        state.assume(frozenset((Fact(key, None, mode),)))


def grad_enabled(flag: cst.BaseExpression, state: State, key_of: Callable[[str], Optional[str]]) -> Optional[bool]:
    """What `torch.set_grad_enabled(flag)` switches to on this path: a literal,
    or a condition the path's facts decide (`self.model.training` after
    `self.model.eval()`); None when not known. `key_of`: the frame's fact keys."""
    literal = literal_bool(flag)
    return literal if literal is not None else paths.decide(flag, state.facts, key_of)
