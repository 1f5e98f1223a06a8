"""Where a hazard found through another module's code is reported.

The rules report in the file being linted, over its own tree. A hazard
whose value was created — or whose backward, loop or accumulating statement
runs — inside a function of another module is placed at the call in this
file through which that code ran (the statement in the scope the user
reads), and keeps where it really is as an `Origin`, which the report turns
into a related location with the other file's own path and position. So no
diagnostic ever points into another file's tree with this file's path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Optional, Union

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.findings import AccumulationHazard, Hazard, HazardKind
from tapelint.analysis.model import BackwardEvent, Loop, StepEvent
from tapelint.analysis.names import ModuleNames
from tapelint.analysis.program import Program
from tapelint.analysis.syntax import walk_nodes
from tapelint.diagnostics import Role

_ROLES = {"definition": Role.DEFINITION, "first_backward": Role.FIRST_BACKWARD, "fails_at": Role.FAILS_AT,
          "accumulator": Role.ACCUMULATOR, "kept_by": Role.FIRST_BACKWARD, "step": Role.STEP}
Event = Union[BackwardEvent, StepEvent]
# Hazards reported at their definition, the backwards only related locations.
_AT_DEFINITION = frozenset((HazardKind.HOISTED, HazardKind.CARRIED))


@dataclass(frozen=True)
class Origin:
    """A part of a hazard (`role`) that is really at `node` in another module."""

    role: Role
    node: cst.CSTNode
    module: cst.Module
    path: str  # absolute
    function: str  # where in that module: "Net.forward"


@dataclass(frozen=True)
class Located:
    """A hazard whose nodes are all in the linted module, and where the
    parts that were moved there really are."""

    hazard: Hazard
    origins: tuple[Origin, ...] = ()


def relocate(hazards: Sequence[Hazard], root: Program, contexts: Iterable[tuple[cst.CSTNode, tuple]],
             names: ModuleNames) -> list[Located]:
    """Place each hazard in the module of `root` (`names` indexes it);
    `contexts` pairs each created node's site and each backward's call with
    the chain of calls it ran under. A hazard that no call of this module
    leads to is left to the module it is in."""
    project = root.project
    if project is None or not any(p is not None and p is not root for p in project.loaded.values()):
        return [Located(h) for h in hazards]  # no other module took part
    placer = _Placer(root, contexts, names)
    placed = (placer.place(h) for h in hazards)
    return [p for p in placed if p is not None]


class _Placer:
    def __init__(self, root: Program, contexts: Iterable[tuple[cst.CSTNode, tuple]], names: ModuleNames) -> None:
        self.root = root
        self.root_names = names
        self.chains: dict[cst.CSTNode, list[tuple]] = {}
        self.entries: dict[cst.FunctionDef, Optional[cst.Call]] = {}  # another module's function -> our call into it
        for site, chain in contexts:
            self.chains.setdefault(site, []).append(chain)
            for call, fn in self._crossings(chain):
                if self.entries.get(fn) is None:
                    self.entries[fn] = call
        self.members: dict[cst.FunctionDef, set[int]] = {}
        self.names: dict[cst.FunctionDef, set[str]] = {}
        self.events: dict[int, Event] = {}

    def _crossings(self, chain: tuple) -> Iterable[tuple[Optional[cst.Call], cst.FunctionDef]]:
        """Each function of another module in `chain`, with the last call of
        this module made before it."""
        inside, last = True, None
        for element in chain:
            if type(element) is cst_nodes.FunctionDef:
                inside = self.root.home_of(element) is self.root
                if not inside:
                    yield last, element
            elif inside and type(element) is cst_nodes.Call:
                last = element

    def _foreign(self, node: cst.CSTNode) -> Optional[tuple[Optional[cst.Call], cst.FunctionDef]]:
        """None when `node` is in this module; else our call it ran under and
        the other module's function it is in."""
        for chain in self.chains.get(node, ()):
            functions = [e for e in chain if type(e) is cst_nodes.FunctionDef]
            if functions and self.root.home_of(functions[-1]) is not self.root:
                crossings = list(self._crossings(chain))
                return crossings[-1] if crossings else (None, functions[-1])
        for fn, call in self.entries.items():
            members = self.members.get(fn)
            if members is None:
                members = self.members[fn] = {id(n) for n in walk_nodes(fn)}
            if id(node) in members:
                return call, fn
        return None

    def place(self, hazard: Hazard) -> Optional[Located]:
        origins: list[Origin] = []
        changes: dict[str, object] = {}
        events = [f.name for f in fields(hazard) if isinstance(getattr(hazard, f.name), (BackwardEvent, StepEvent))]
        inherited = hazard.kind in _AT_DEFINITION
        for name in events:
            event = getattr(hazard, name)
            moved = self._event(event, name, origins, inherited)
            if moved is None:
                return None
            changes[name] = moved
        for f in fields(hazard):  # `also_fails_at`: more walks of the same hazard
            value = getattr(hazard, f.name)
            if isinstance(value, tuple) and value and all(isinstance(e, BackwardEvent) for e in value):
                moved_all = [self._event(e, "fails_at", origins, inherited) for e in value]
                if any(e is None for e in moved_all):
                    return None
                changes[f.name] = tuple(moved_all)
        # (not a base class an inherited backward was placed at: a definition goes to a call)
        fallback = next((e.call for e in changes.values()
                         if isinstance(e, BackwardEvent) and type(e.call) is cst_nodes.Call), None)
        for f in fields(hazard):
            value = getattr(hazard, f.name)
            if f.name in events or f.name in changes or not isinstance(value, (cst.CSTNode, Loop)):
                continue
            node = value.node if isinstance(value, Loop) else value
            found = self._foreign(node)
            if found is None and not self._in_root(node):
                # in another module, yet reached by no call of this one (a container
                # an inherited method made): a role must be placed, a detail is dropped
                if f.name in _ROLES or isinstance(value, Loop):
                    return None
                changes[f.name] = None
                continue
            if found is None:
                continue
            call, fn = found
            call = call or fallback
            if call is None and isinstance(value, Loop):
                # a loop of an inherited method: where its backward was placed (the base class)
                call = next((e.call for e in changes.values() if isinstance(e, BackwardEvent)), None)
            if call is None:
                return None
            if f.name in _ROLES:
                origins.append(self._origin(_ROLES[f.name], node, fn))
            if isinstance(value, Loop):
                changes[f.name] = replace(value, node=call)
            elif isinstance(value, cst.Arg):
                changes[f.name] = None  # an argument of another file's call: no edit here
            else:
                changes[f.name] = call
            if (f.name == "definition" and hazard.kind is not HazardKind.CARRIED and self._named_in(hazard.value, fn)
                    and not self._accumulates_inside(hazard)):
                # the name is the other function's (`out`): show the call that returns it here
                changes["value"] = abbreviate(self.root.module.code_for_node(call))
        if not changes:
            return Located(hazard)
        anchor = getattr(hazard, "anchor", None)  # only some hazard kinds have one
        if "definition" in changes and anchor is not None and changes.get("anchor", anchor) is changes["definition"]:
            changes["anchor"] = None  # both at the one call of this file
        return Located(replace(hazard, **changes), tuple(origins))  # type: ignore[arg-type]

    def _accumulates_inside(self, hazard: Hazard) -> bool:
        """Is the accumulating statement of `hazard` in another module? Its
        value is then named as there (`loss.float()`, in `train`), not by our call."""
        return isinstance(hazard, AccumulationHazard) and self._foreign(hazard.accumulator) is not None

    def _in_root(self, node: cst.CSTNode) -> bool:
        return node is self.root.module or self.root_names.parent(node) is not None

    def _named_in(self, value: str, fn: cst.FunctionDef) -> bool:
        names = self.names.get(fn)
        if names is None:
            names = self.names[fn] = {n.value for n in walk_nodes(fn) if type(n) is cst_nodes.Name}
        return value.split(".")[0] in names

    def _event(self, event: Event, name: str, origins: list[Origin], inherited: bool) -> Optional[Event]:
        """`event` placed in this module. `inherited`: the hazard's primary is its
        definition, so an event of a method a class of this module inherits
        from another module (a base trainer's `learn()` running this class's
        hooks), which no call of this module leads to, may be placed at that
        base class in the class's header; only its position is read."""
        found = self._foreign(event.call)
        if found is None:
            return event
        crossings = list(self._crossings(event.context))
        call, fn = crossings[-1] if crossings else found  # the chain this event ran under says which call it was
        origins.append(self._origin(_ROLES[name], event.call, fn))
        anchor: Optional[cst.CSTNode] = call
        if anchor is None and inherited and crossings:
            anchor = self._inheriting_base(crossings[0][1])
        if anchor is None:
            return None
        moved = self.events.get(id(event))
        if moved is None:
            moved = self.events[id(event)] = replace(event, call=anchor)  # type: ignore[arg-type]
        return moved

    def _inheriting_base(self, fn: cst.FunctionDef) -> Optional[cst.BaseExpression]:
        """The base class, in the header of a class of this module, through
        which that class inherits the method `fn` of another module."""
        if self.root.home_of(fn) is self.root:
            return None
        for info in self.root.classes.values():
            if info.methods.get(fn.name.value) is not fn:
                continue
            for base, base_info in zip(info.node.bases, self.root.base_classes(info.node)):
                if base_info.methods.get(fn.name.value) is fn:
                    return base.value
            return info.node.bases[0].value if info.node.bases else None
        return None

    def _origin(self, role: Role, node: cst.CSTNode, fn: cst.FunctionDef) -> Origin:
        home = self.root.home_of(fn)
        owner = next((c.node.name.value for c in home.classes.values() if c.methods.get(fn.name.value) is fn), None)
        function = f"{owner}.{fn.name.value}" if owner else fn.name.value
        return Origin(role, node, home.module, home.path, function)
