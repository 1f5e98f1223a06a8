"""A node's children at the cost of reading its fields.

libcst's `CSTNode.children` collects them by visiting the node, and a visit
rebuilds it (`_visit_and_replace_children` constructs a new node of every
child it passes): on a 300-line training script, a parent map built from
`children` costs more than parsing the file. `children_of` gives the same
nodes in the same (lexical) order by reading the fields that
`_visit_and_replace_children` visits, in the order it visits them: each
libcst node class spells them as `visit_*(self, "field", ...)` calls,
which are read once per class from its source (a class that names none has
no children). A class whose source is not at hand keeps libcst's `children`.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Sequence
from typing import Optional

import libcst as cst

# Per node class: the names of the fields its children come from, in
# lexical order; None where libcst's own `children` is used.
_FIELDS: dict[type, Optional[tuple[str, ...]]] = {}


def children_of(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """`node.children`: its child nodes, in source order."""
    kind = type(node)
    try:
        fields = _FIELDS[kind]
    except KeyError:
        fields = _FIELDS[kind] = _visited_fields(kind)
    if fields is None:
        return node.children
    found: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        holds = _HOLDS.get(type(value))
        if holds is None:
            holds = _holds(type(value))
        if holds is _NODE:
            found.append(value)
        elif holds is _ITEMS:
            for item in value:
                item_holds = _HOLDS.get(type(item))
                if (item_holds if item_holds is not None else _holds(type(item))) is _NODE:
                    found.append(item)
    return found


# What a field's value is, by its type: a node, a sequence of possible
# nodes, or neither (a string, a sentinel, None). `CSTNode` is an abstract
# class, whose `isinstance` is a slow path taken for every field of every
# node of every walk; a type's answer is looked up once.
_NODE, _ITEMS, _NEITHER = "node", "items", "neither"
_HOLDS: dict[type, str] = {}


def _holds(kind: type) -> str:
    holds = _NODE if issubclass(kind, cst.CSTNode) else _ITEMS if issubclass(kind, (list, tuple)) else _NEITHER
    _HOLDS[kind] = holds
    return holds


def _visited_fields(kind: type) -> Optional[tuple[str, ...]]:
    """The fields `kind._visit_and_replace_children` visits, in its order."""
    try:
        source = textwrap.dedent(inspect.getsource(kind._visit_and_replace_children))  # type: ignore[attr-defined]
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    fields = []
    for call in _calls_in_order(tree):
        function = call.func
        if (isinstance(function, ast.Name) and function.id.startswith("visit_") and len(call.args) >= 2
                and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)):
            fields.append(call.args[1].value)
    return tuple(dict.fromkeys(fields))  # a field visited in either arm of a condition counts once


def _calls_in_order(tree: ast.AST) -> list[ast.Call]:
    """Every call in `tree`, in the order of their positions in the source."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))
