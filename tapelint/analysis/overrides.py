"""Which methods a class inherits from another module run on its instances
exactly as on the base class's: the driver need not analyse those again
for the subclass.

A subclass of a base trainer of another file (`class Trainer(DefaultTrainer)`
overriding one classmethod) inherits dozens of methods; analysed on their
own for the subclass, they repeat the base module's own analysis (its file
reports what they hold) in every file that subclasses it (on detectron2 such
methods took 15% of the run; those left out here, 7% of its Python calls).
An inherited method is analysed for the subclass when the
subclass can change what it does: it reaches, through `self` (its own
attribute uses, and those of the inherited methods it reaches), a name the
subclass defines or assigns, or it assigns an attribute that the subclass's
own code reads, or another such method reads. Anything the syntax cannot
bound keeps every method: `self` used other than as `self.<name>` (passed to a
function, `getattr(self, ...)`, `type(self)`) in the subclass's methods or in
the inherited ones reached, a class decorator or a metaclass. A subclass
`__init__` counts as changing every attribute the base's `__init__` assigns
(it may pass other arguments, or not call it).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.program import ClassInfo, Program
from tapelint.analysis.syntax import per_analysis, self_assignments, walk_nodes, walk_statements


def unchanged_inherited(program: Program, info: ClassInfo) -> frozenset[cst.FunctionDef]:
    """The methods of `info` inherited from another module's class that the
    class's own code cannot change (see the module's docstring)."""
    own = {s.name.value: s for s in info.node.body.body if type(s) is cst_nodes.FunctionDef}
    foreign = {name: fn for name, fn in info.methods.items()
               if name not in own and name != "__init__" and program.home_of(fn) is not program}
    if not foreign or info.node.decorators or info.node.keywords:
        return frozenset()  # (a class decorator or metaclass may write methods of its own)
    touched = set(own) | _class_level_names(info.node)
    if "__init__" in own:
        # The base's `__init__` may be given other arguments, or not run: what it
        # assigns may differ on this class's instances.
        base_init = next((base.methods["__init__"] for base in program.base_classes(info.node)
                          if "__init__" in base.methods), None)
        found = _reached(info, base_init) if base_init is not None else (frozenset(), frozenset())
        if found is None:
            return frozenset()
        touched |= found[1]
    own_reads: set[str] = set()
    for fn in own.values():
        used = self_uses(fn)
        if used is None:
            return frozenset()
        own_reads |= used
        touched |= _assigned(fn, used)
    reach = {name: _reached(info, fn) for name, fn in foreign.items()}
    bounded = {name: found for name, found in reach.items() if found is not None}
    kept = {name for name in foreign if name not in bounded or bounded[name][0] & touched
            or bounded[name][1] & own_reads}
    while True:  # what a kept method reads, another may not leave unanalysed
        reads = {attr for name in kept if name in bounded for attr in bounded[name][0]}
        more = {name for name, (_, assigned) in bounded.items() if name not in kept and assigned & reads}
        if not more:
            break
        kept |= more
    return frozenset(fn for name, fn in foreign.items() if name not in kept)


def _reached(info: ClassInfo, fn: cst.FunctionDef) -> Optional[tuple[frozenset[str], frozenset[str]]]:
    """The `self.<name>`s that `fn` and the methods it reaches through `self`
    use, and the attributes they assign; None when `self` escapes."""
    used: set[str] = set()
    assigned: set[str] = set()
    pending = [fn]
    seen: set[cst.FunctionDef] = set()
    while pending:
        method = pending.pop()
        if method in seen:
            continue
        seen.add(method)
        names = self_uses(method)
        if names is None:
            return None
        used |= names
        assigned |= _assigned(method, names)
        pending.extend(info.methods[name] for name in names if name in info.methods)
    return frozenset(used), frozenset(assigned)


@per_analysis
def self_uses(fn: cst.FunctionDef) -> Optional[frozenset[str]]:
    """Every `<self>.<name>` in the body of method `fn` (its first parameter,
    whatever it is called); None when that parameter appears otherwise: it
    escapes, and anything may be done to it."""
    params = fn.params.params or fn.params.posonly_params
    if not params:
        return frozenset()
    me = params[0].name.value
    names: set[str] = set()
    as_value = 0
    total = 0
    for node in walk_nodes(fn.body):
        if type(node) is cst_nodes.Name and node.value == me:
            total += 1
        elif type(node) is cst_nodes.Attribute and type(node.value) is cst_nodes.Name and node.value.value == me:
            as_value += 1
            names.add(node.attr.value)
    return frozenset(names) if total == as_value else None


def _assigned(fn: cst.FunctionDef, used: frozenset[str]) -> frozenset[str]:
    """The attributes `fn` assigns on its first parameter, given `used`, its
    `self_uses`: `self_assignments` reads `self.` targets only, so a method
    naming that parameter otherwise (`cls`) counts every attribute it uses."""
    params = fn.params.params or fn.params.posonly_params
    if params and params[0].name.value == "self":
        return frozenset(attr for attr, _ in self_assignments(fn))
    return used


def _class_level_names(node: cst.ClassDef) -> set[str]:
    """What the class body binds besides methods: class attributes, nested classes."""
    names: set[str] = set()
    for stmt in walk_statements(node.body.body, into_definitions=False):
        if type(stmt) is cst_nodes.ClassDef:
            names.add(stmt.name.value)
        elif type(stmt) is cst_nodes.Assign:
            names |= {n.value for t in stmt.targets for n in walk_nodes(t.target) if type(n) is cst_nodes.Name}
        elif type(stmt) in (cst_nodes.AnnAssign, cst_nodes.AugAssign):
            names |= {n.value for n in walk_nodes(stmt.target) if type(n) is cst_nodes.Name}  # type: ignore[attr-defined]
    return names
