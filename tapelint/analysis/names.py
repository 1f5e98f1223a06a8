"""Names, bindings and uses on the syntax tree of one module, for the code
that edits it (the fixes): which node holds which, where a name is read,
what a scope binds and assigns.

`ModuleNames` indexes a module once (one pass over its nodes), so every
query a fix makes costs what it returns, not a walk of the whole module.
Names are matched by spelling, not by scope: a same-named variable elsewhere
can only make a fix's safety verdict stricter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cached_property
from typing import Optional, TypeVar

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.children import children_of
from tapelint.analysis.syntax import walk_nodes

N = TypeVar("N", bound=cst.CSTNode)


class ModuleNames:
    """Parent links, reads by spelling, attribute uses and assignments of one module."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module

    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child -> parent."""
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            node = stack.pop()
            for child in children_of(node):
                parents[child] = node
                stack.append(child)
        return parents

    @cached_property
    def _index(self) -> tuple[dict[str, list[cst.Name]], dict[str, list[cst.Attribute]]]:
        reads: dict[str, list[cst.Name]] = {}
        attributes: dict[str, list[cst.Attribute]] = {}
        for node, parent in self.parents.items():
            if type(node) is cst_nodes.Name:
                if type(parent) is cst_nodes.Attribute and parent.attr is node:
                    continue  # `x.name`: an attribute name, not a use of `name`
                if type(parent) is cst_nodes.Arg and parent.keyword is node:
                    continue  # `f(name=...)`: a keyword
                reads.setdefault(node.value, []).append(node)
            elif type(node) is cst_nodes.Attribute:
                attributes.setdefault(node.attr.value, []).append(node)
        return reads, attributes

    def uses(self, name: str) -> list[cst.Name]:
        """Every `Name` spelled `name` (read, bound or deleted), except attribute
        names and keyword names."""
        return self._index[0].get(name, [])

    def attribute_uses(self, attr: str) -> list[cst.Attribute]:
        """Every `x.attr`, whatever `x` is."""
        return self._index[1].get(attr, [])

    @cached_property
    def assignments(self) -> list[tuple[str, cst.BaseExpression]]:
        """(last name of the target, value) for every single-target assignment:
        `criterion = nn.MSELoss()` and `self.criterion = ...` both give `criterion`."""
        found = []
        for node in self.parents:
            if type(node) is cst_nodes.Assign and len(node.targets) == 1:
                target = node.targets[0].target
                if type(target) is cst_nodes.Name:
                    found.append((target.value, node.value))
                elif type(target) is cst_nodes.Attribute:
                    found.append((target.attr.value, node.value))
        return found

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(node)

    def ancestor(self, node: cst.CSTNode, kinds: tuple[type, ...]) -> Optional[cst.CSTNode]:
        """The nearest enclosing node of one of `kinds`."""
        current = self.parents.get(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parents.get(current)
        return current

    def within(self, node: Optional[cst.CSTNode], ancestor: Optional[cst.CSTNode]) -> bool:
        """Is `node` `ancestor` or inside it?"""
        while node is not None:
            if node is ancestor:
                return True
            node = self.parents.get(node)
        return False

    def is_binding(self, node: cst.CSTNode) -> bool:
        """Is `node` (re)bound, accumulated into or deleted here rather than read?"""
        parent = self.parents.get(node)
        if type(parent) is cst_nodes.AssignTarget or type(parent) is cst_nodes.Del:
            return True
        return (type(parent) is cst_nodes.AugAssign or type(parent) is cst_nodes.AnnAssign) and parent.target is node

    def used_outside(self, names: Iterable[str], inside: tuple[cst.CSTNode, ...]) -> bool:
        """Is any of `names` mentioned in the module outside the `inside` subtrees?"""
        return any(
            not any(self.within(use, subtree) for subtree in inside) for name in names for use in self.uses(name)
        )


# Small visitors, for the subtree a fix looks at (not the whole module). They
# live at module level and keep their state on the instance: a class defined
# inside a function is a reference cycle that would keep the tree alive.


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, name: cst.Name) -> None:
        self.names.add(name.value)

    def visit_Attribute(self, attribute: cst.Attribute) -> bool:
        attribute.value.visit(self)
        return False

    def visit_Arg(self, arg: cst.Arg) -> bool:
        arg.value.visit(self)
        return False


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier read or written in `node` (attribute names and keyword names excluded)."""
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


def target_names(target: cst.CSTNode) -> set[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`)."""
    if type(target) is cst_nodes.Name:
        return {target.value}
    if type(target) is cst_nodes.Tuple or type(target) is cst_nodes.List:
        return set().union(*(target_names(element.value) for element in target.elements))
    if type(target) is cst_nodes.StarredElement:
        return target_names(target.value)
    return set()


# Where each binding node keeps what it binds.
_BINDING_FIELDS: dict[type, str] = {
    cst.AssignTarget: "target", cst.AugAssign: "target", cst.AnnAssign: "target", cst.For: "target",
    cst.CompFor: "target", cst.AsName: "name", cst.NamedExpr: "target", cst.Del: "target",
}


def bound_in(node: cst.CSTNode) -> set[str]:
    """Every identifier `node` binds: assignment, loop, `with ... as`, walrus, comprehension targets.
    (A walk of the fields, not a visitor: a loop's body is asked at every pass.)"""
    return bound_and_found(node, None)[0]


def binding_counts(node: cst.CSTNode) -> Counter[str]:
    """How many times each identifier is bound anywhere in `node`: by what
    `bound_in` counts, and by definitions, imports without `as` and `global`
    declarations; a star import counts as `"*"` (it may bind any name)."""
    counts: Counter[str] = Counter()
    for inner in walk_nodes(node):
        field = _BINDING_FIELDS.get(type(inner))
        if field is not None:
            counts.update(target_names(getattr(inner, field)))
        elif type(inner) is cst_nodes.FunctionDef or type(inner) is cst_nodes.ClassDef:
            counts[inner.name.value] += 1
        elif type(inner) is cst_nodes.Global:
            counts.update(item.name.value for item in inner.names)
        elif type(inner) is cst_nodes.Import or type(inner) is cst_nodes.ImportFrom:
            if isinstance(inner.names, cst.ImportStar):
                counts["*"] += 1
            else:  # (an alias with `as` is an `AsName`, counted above)
                counts.update(alias.evaluated_name.split(".")[0] for alias in inner.names if alias.asname is None)
    return counts


def bound_and_found(node: cst.CSTNode, kind: Optional[type[N]]) -> tuple[set[str], list[N]]:
    """`bound_in(node)`, and the nodes of type `kind` inside `node`, in one
    walk (a training loop's body can be most of its file)."""
    bound: set[str] = set()
    found: list[N] = []
    for inner in walk_nodes(node):
        if type(inner) is kind:
            found.append(inner)
            continue
        field = _BINDING_FIELDS.get(type(inner))
        if field is not None:
            bound |= target_names(getattr(inner, field))
    return bound, found


class _AssignmentCollector(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[tuple[Optional[cst.BaseExpression], Optional[int]]] = []

    def _spelled(self, node: cst.CSTNode) -> bool:
        return _EMPTY.code_for_node(node) == self.name

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._spelled(target.target):
                self.found.append((node.value, None))
            elif isinstance(target.target, (cst.Tuple, cst.List)):
                for i, element in enumerate(target.target.elements):
                    if self._spelled(element.value):
                        self.found.append((node.value, i))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._spelled(node.target):
            self.found.append((node.value, None))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._spelled(node.target):
            self.found.append((node.value, None))

    def visit_For(self, node: cst.For) -> None:
        if self.name in target_names(node.target):
            self.found.append((None, None))

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value == self.name:
            self.found.append((None, None))


_EMPTY = cst.Module(body=())


def bindings(scope: cst.CSTNode, name: str) -> list[tuple[Optional[cst.BaseExpression], Optional[int]]]:
    """(value, index) for every assignment to `name` (a name or `self.x`) in
    `scope`: index is the position of `name` in an unpacking target (None:
    the whole value), value None when it is bound some other way (a loop
    variable, a parameter...)."""
    collector = _AssignmentCollector(name)
    scope.visit(collector)
    return collector.found


class _OuterDeclarationFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Global(self, node: cst.Global) -> None:
        self.found = self.found or any(n.name.value == self.name for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found = self.found or any(n.name.value == self.name for n in node.names)


def declared_outer(scope: cst.CSTNode, name: str) -> bool:
    """Does `scope` declare `global name` or `nonlocal name`?"""
    finder = _OuterDeclarationFinder(name)
    scope.visit(finder)
    return finder.found


class _CallCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[cst.Call] = []

    def visit_Call(self, call: cst.Call) -> None:
        self.calls.append(call)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    collector = _CallCollector()
    node.visit(collector)
    return collector.calls
