"""Path facts across a call boundary.

A parameter bound to a literal at the call (`run(False)`, or a literal
default left unpassed) takes the same branch of every test on it in the
callee until it is rebound, as a stable name does within one scope
(`analysis/paths.py`): `x if eager else y` takes one arm.

A test on an object's attribute that no method but `__init__` assigns
(`if self.automatic_entropy_tuning:`) takes the same branch in every call
on that object. So the facts and guards a caller's path holds about such
*stable* attributes go into a method called on the object (as `self.*`),
and what the method's paths leave about them comes back: a value a method
stored under `if self.tune:` is guarded by that fact in the caller, and
the next call's path that skips the branch drops it. Facts about anything
else stay on their side of the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.paths import NO_FACTS, Fact, Facts, literal_text
from tapelint.analysis.program import ClassInfo
from tapelint.analysis.state import State
from tapelint.analysis.syntax import self_assignments


def stable_attributes(owner: Optional[ClassInfo]) -> Callable[[str], bool]:
    """Is `self.<attr>` assigned by no method of the class but `__init__`?
    (An assignment from outside, `obj.attr = v`, rebinds the key there.)
    The class is read on the first question only: most calls have no facts."""
    assigned: list[set[str]] = []

    def stable(attr: str) -> bool:
        if owner is None:
            return False
        if not assigned:
            assigned.append({attr for name, method in owner.methods.items() if name != "__init__"
                             for attr, _ in self_assignments(method)})
        return attr not in assigned[0]

    return stable


@dataclass(frozen=True)
class Boundary:
    """How a call's keys are named on either side: `caller_prefix` is the
    object's key prefix (a method called on an object) or `self.` (caller
    and callee both say `self`); None when the callee sees none of the
    caller's attributes."""

    caller_prefix: Optional[str]
    stable: Callable[[str], bool]

    def inward(self, key: str) -> Optional[str]:
        rest = _after(key, self.caller_prefix)
        return None if rest is None else "self." + rest

    def outward(self, key: str) -> Optional[str]:
        rest = _after(key, "self.") if self.caller_prefix is not None else None
        return None if rest is None else self.caller_prefix + rest  # type: ignore[operator]

    def is_stable(self, caller_key: str) -> bool:
        rest = _after(caller_key, self.caller_prefix)
        return rest is not None and self.stable(rest.split(".", 1)[0])

    def facts_in(self, facts: Iterable[Fact]) -> Facts:
        return _renamed(facts, lambda key: self.inward(key) if self.is_stable(key) else None)

    def facts_out(self, facts: Iterable[Fact]) -> Facts:
        def rename(key: str) -> Optional[str]:
            outer = self.outward(key)
            return outer if outer is not None and self.is_stable(outer) else None

        return _renamed(facts, rename)


def boundary(own: Optional[str], share_self: bool, owner: Optional[ClassInfo]) -> Boundary:
    return Boundary(own if own else "self." if share_self else None, stable_attributes(owner))


def _after(key: str, prefix: Optional[str]) -> Optional[str]:
    return key[len(prefix):] if prefix is not None and key.startswith(prefix) else None


def _renamed(facts: Iterable[Fact], rename: Callable[[str], Optional[str]]) -> Facts:
    """The facts about keys `rename` maps, under their new keys."""
    out = set()
    for fact in facts:
        key = rename(fact.key)
        if key is not None:
            out.add(Fact(key, fact.literal, fact.holds))
    return frozenset(out)


def into_call(state: State, inner: State, edge: Boundary) -> None:
    """The callee's entry state learns what the caller's path knows of the
    object's stable attributes, and the guards built on that knowledge."""
    if not (state.facts or state.guards) or edge.caller_prefix is None:
        return
    inner.facts = inner.facts | edge.facts_in(state.facts)
    for slot, guard in state.guards.items():
        facts = edge.facts_in(guard)
        if not facts:
            continue
        if slot[0] != "env":
            inner.guards[slot] = facts
            continue
        name = edge.inward(slot[1])
        if name is not None:
            inner.guards[("env", name, slot[2])] = facts


def out_of_call(end: State, state: State, edge: Boundary, written: Iterable[str]) -> None:
    """The caller after the call: what the callee's paths left about the
    object's stable attributes is what the caller knows of them now (the
    callee started from it), and the values it wrote back (`written`, the
    caller's keys) keep the callee's guards on them."""
    if not (state.facts or state.guards or end.facts or end.guards) or edge.caller_prefix is None:
        return
    written = set(written)
    for slot in [s for s in state.guards if s[0] == "env" and s[1] in written]:
        del state.guards[slot]
    for slot, guard in end.guards.items():
        facts = edge.facts_out(guard)
        if slot[0] != "env":
            if facts:
                state.guards[slot] = facts
            else:
                state.guards.pop(slot, None)
            continue
        name = edge.outward(slot[1])
        if name is not None and name in written and facts:
            state.guards[("env", name, slot[2])] = facts
    state.assume(edge.facts_out(end.facts))


def literal_parameters(fn: cst.FunctionDef, call: cst.CSTNode, method: bool) -> Facts:
    """`param == literal` for each parameter of `fn` that `call` binds to a
    literal argument, or leaves at a literal default."""
    if type(call) is not cst_nodes.Call:
        return NO_FACTS
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if method and params and not any(dotted_name(d.decorator) == "staticmethod" for d in fn.decorators):
        params = params[1:]
    bound: dict[str, cst.BaseExpression] = {}
    positional = True
    spread = False
    for i, arg in enumerate(call.args):
        if arg.star:
            # `f(*xs)`: which parameter the later arguments bind is not known;
            # `f(**kw)`: nor which ones it binds: their defaults say nothing
            positional = False
            spread = True
            continue
        if arg.keyword is not None:
            positional = False
            bound[arg.keyword.value] = arg.value
        elif positional and i < len(params):
            bound[params[i].name.value] = arg.value
    out = set()
    for param in params + list(fn.params.kwonly_params):
        expr = bound.get(param.name.value, None if spread else param.default)
        literal = literal_text(expr) if expr is not None else None
        if literal is not None:
            out.add(Fact(param.name.value, literal, True))
    return frozenset(out)
