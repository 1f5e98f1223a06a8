"""Framework protocols: a framework's training loop calls a hook of the
user's class once per step and backwards what it returns — Lightning's
automatic optimization backwards what `training_step` returns, Hugging Face
`Trainer.training_step` what `compute_loss` returns. The analysis models
that loop: the hook runs as the body of an implicit loop, and after each
call the value it returned is walked by a backward of the framework, so
state the hook keeps on `self` across steps (`self._metrics[k].append(loss)`)
and a `.backward()` of the returned loss inside the hook are seen as they
happen at run time. Which classes follow a protocol is read from their base
classes (`torch_api.STEP_HOOK_BASES` / `STEP_HOOK_PACKAGES`), through the
project's own subclasses of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes, torch_api
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp.frame import Frame
from tapelint.analysis.interp.torch_calls import walk_returned
from tapelint.analysis.model import TupleVal
from tapelint.analysis.program import ClassInfo, Program
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.syntax import walk_statements
from tapelint.analysis.torch_api import literal_bool

MAX_BASE_DEPTH = 6  # how far up the project's own class hierarchy a framework base is looked for


def step_hooks(program: Program, info: ClassInfo) -> frozenset[str]:
    """The methods of `info` (defined in it) that a framework calls once per
    step and backwards the result of."""
    hooks = _framework_hooks(program, info.node, 0)
    if "training_step" in hooks and _optimizes_manually(info):
        hooks = hooks - {"training_step"}
    return frozenset(name for name in hooks if name in info.methods)


def _framework_hooks(program: Program, node: cst.ClassDef, depth: int) -> frozenset[str]:
    if depth > MAX_BASE_DEPTH:
        return frozenset()
    home = program.home_of(node)
    found: set[str] = set()
    for base in node.bases:
        name = dotted_name(base.value)
        if name is None:
            continue
        canonical = home.imports.resolve(name)
        if canonical is not None:
            found |= hooks_of_library_class(canonical)
        parent = home.classes.get(name) or home.foreign_class(name)
        if parent is not None and parent.node is not node:
            found |= _framework_hooks(home, parent.node, depth + 1)
    return frozenset(found)


def hooks_of_library_class(canonical: str) -> frozenset[str]:
    """The step hooks of a framework class, by its canonical dotted name."""
    hooks = torch_api.STEP_HOOK_BASES.get(canonical)
    if hooks is not None:
        return hooks
    package, _, rest = canonical.partition(".")
    protocol = torch_api.STEP_HOOK_PACKAGES.get(package)
    if protocol is not None and rest and rest.rsplit(".", 1)[-1].endswith(protocol[0]):
        return protocol[1]
    return frozenset()


def _optimizes_manually(info: ClassInfo) -> bool:
    """Does a method of the class switch Lightning's automatic optimization off?"""
    for method in info.methods.values():
        for stmt in walk_statements(method.body.body):
            if type(stmt) is cst_nodes.Assign and literal_bool(stmt.value) is False and any(
                    dotted_name(t.target) == torch_api.MANUAL_OPTIMIZATION_FLAG for t in stmt.targets):
                return True
    return False


class HookFrame(Frame):
    """The frame of a hook called once per step: after each call (each pass
    of its implicit loop) the framework backwards what the call returned."""

    def exec_block(self, body: Sequence[cst.CSTNode], state: State) -> State:
        hook = self.scope
        if type(hook) is not cst_nodes.FunctionDef or body is not hook.body.body:
            return super().exec_block(body, state)
        exits, returns = len(self.exits), len(self.returns)
        end = super().exec_block(body, state)
        for exit_state in self.exits[exits:]:
            end = State.join(end, exit_state)
        del self.exits[exits:]
        returned: Vals = EMPTY
        for vals in self.returns[returns:]:
            returned |= _backwarded_part(vals)
        del self.returns[returns:]
        site = _last_return(hook)
        if site is not None and returned:
            walk_returned(self, site, returned, end, f"the framework's backward of what {hook.name.value}() returns")
        return end


def _backwarded_part(vals: Vals) -> Vals:
    """`return loss` or `return (loss, outputs)`: the loss (the first element)."""
    out: set = set()
    for value in vals:
        if isinstance(value, TupleVal) and value.items:
            out |= value.items[0]
        else:
            out.add(value)
    return frozenset(out)


def _last_return(fn: cst.FunctionDef) -> Optional[cst.BaseExpression]:
    """The value of the hook's last `return` with a value: where the
    framework's backward is reported."""
    site: Optional[cst.BaseExpression] = None
    for stmt in walk_statements(fn.body.body, into_definitions=False):
        if type(stmt) is cst_nodes.Return and stmt.value is not None:
            site = stmt.value
    return site
