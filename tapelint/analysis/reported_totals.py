"""Which totals a module accumulates, and which names it only reports after
a loop, read from CPython's tree: the pre-check's second stage
(`precheck.may_hold_hazard_in_tree`).

A file whose analysis can run no backward can hold one hazard only: TL003
in an evaluation loop, a total accumulated in a loop and only reported after
it (`accumulation._only_reported_after`: every use of its name in the
statements after the loop prints, logs, formats or `.item()`s it). Its name
is the base name of what an accumulating statement adds into (`+=`,
`t = t + x`, `.append(...)` and the other adders, `.add_(...)`). So when no
name accumulated anywhere the analysis can reach is, after some loop there,
only reported, the file cannot hold a hazard.

Sound by construction against the analysis: `accumulated` over-approximates
the targets it notes (every augmented assignment, every assignment of a
binary operation, every receiver of an adder), and `reported_after_a_loop`
classifies each use exactly as `accumulation._UseFinder` does on libcst's
tree, where an attribute's name, a keyword argument's and a parameter's are
uses too (`tests/test_reported_totals.py` compares the two on every fixture).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional, Union

from tapelint.analysis import ast_nodes
from tapelint.analysis.torch_api import (
    IN_PLACE_ADDERS,
    LIST_ADDERS,
    NUMBER_CALLS,
    REPORTING_CALLS,
    UNGRAPHING_READS,
)

_ADDERS = LIST_ADDERS | IN_PLACE_ADDERS
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DIVISIONS = (ast.Div, ast.FloorDiv)


@dataclass(frozen=True)
class Totals:
    """What one module accumulates into, and reports after a loop."""

    accumulated: frozenset[str]
    reported_after_a_loop: frozenset[str]


def totals_of(tree: ast.Module) -> Totals:
    """The totals of the module `tree` (raises RecursionError on a tree too deep to walk)."""
    accumulated: set[str] = set()
    nodes: list[ast.AST] = [tree]
    while nodes:
        node = nodes.pop()
        target = _accumulation_target(node)
        if target is not None:
            accumulated.add(target)
        nodes.extend(child_nodes(node))
    reported: set[str] = set()
    memo: dict[int, dict[str, bool]] = {}
    for block in statement_blocks(tree):
        reported.update(_reported_after_loops(block, memo))
    return Totals(frozenset(accumulated), frozenset(reported))


def statement_blocks(tree: Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
                     ) -> Iterator[list[ast.stmt]]:
    """Every statement list of `tree` (a module, or a definition), its body
    first: what the analysis runs as blocks (a walk of statements only, not
    of expressions)."""
    blocks: list[list[ast.stmt]] = [tree.body]
    while blocks:
        block = blocks.pop()
        yield block
        for stmt in block:
            blocks.extend(blocks_of(stmt))


def reports_a_total(totals: Iterable[Totals]) -> bool:
    """Can a total accumulated in one of these modules be reported after a
    loop of one of them (the statement may run in a callee of the loop)?"""
    accumulated: set[str] = set()
    reported: set[str] = set()
    for one in totals:
        accumulated.update(one.accumulated)
        reported.update(one.reported_after_a_loop)
    return not accumulated.isdisjoint(reported)


def _accumulation_target(node: ast.AST) -> Optional[str]:
    if type(node) is ast_nodes.AugAssign:
        return _base_name(node.target)
    if type(node) is ast_nodes.Assign and len(node.targets) == 1 and type(node.value) is ast_nodes.BinOp:
        return _base_name(node.targets[0])
    if type(node) is ast_nodes.Call and type(node.func) is ast_nodes.Attribute and node.func.attr in _ADDERS:
        return _base_name(node.func.value)
    return None


def _base_name(target: ast.expr) -> Optional[str]:
    while type(target) is ast_nodes.Subscript:
        target = target.value
    return dotted_of(target)


def dotted_of(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a name or an attribute chain on one; None for anything else (`f().x`)."""
    parts: list[str] = []
    while type(node) is ast_nodes.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast_nodes.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def blocks_of(stmt: ast.stmt) -> Iterable[list[ast.stmt]]:
    """The statement lists directly under `stmt`: what the analysis runs as blocks."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if type(block) is list and block and isinstance(block[0], ast.stmt):
            yield block
    for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
        yield part.body


def _reported_after_loops(block: Sequence[ast.stmt], memo: dict[int, dict[str, bool]]) -> set[str]:
    """The names whose every use after some loop of `block`, in the rest of
    `block`, only reports them (at least one use)."""
    loops = [index for index, stmt in enumerate(block) if type(stmt) in _LOOPS]
    if not loops:
        return set()
    reported: set[str] = set()
    after: dict[str, bool] = {}  # over the statements after the current one: name -> every use reports
    for index in range(len(block) - 1, loops[0], -1):
        _merge(after, _statement_uses(block[index], memo))
        if type(block[index - 1]) in _LOOPS:
            reported.update(name for name, reports in after.items() if reports)
    return reported


def _merge(into: dict[str, bool], uses: dict[str, bool]) -> None:
    for name, reports in uses.items():
        if not reports or name not in into:
            into[name] = reports


def _statement_uses(stmt: ast.stmt, memo: dict[int, dict[str, bool]]) -> dict[str, bool]:
    """Every name used in `stmt` (dotted names and each of their parts, and
    the identifiers libcst holds as names): whether each of its uses only
    reports it. A use's verdict is its innermost deciding ancestor's
    (`accumulation._UseFinder._reporting`), carried down the tree."""
    found = memo.get(id(stmt))
    if found is None:
        found = memo[id(stmt)] = {}
        _visit(stmt, False, None, found, {}, memo)
    return found


def _visit(node: ast.AST, state: bool, unused: Optional[str], uses: dict[str, bool], averaged: dict[int, str],
           memo: dict[int, dict[str, bool]]) -> None:
    """Note the uses under `node` of one statement. `state`: what the
    ancestors decided for a use at `node` (a statement: computed with);
    `unused`: a name whose occurrences here are no uses of it; `averaged`:
    where the totals of `total /= n` and `total = total / n` occur (the same
    metric, averaged: no use of it)."""
    unused = averaged.get(id(node), unused)
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = dotted_of(node)
        if dotted is not None and dotted != unused:
            _note(uses, dotted, state)
    own = _decided(node, _IDENTIFIER)
    for identifier in _identifiers(node):
        if identifier != unused:
            _note(uses, identifier, state if own is None else own)
    total = _averaged(node)
    if total is not None:
        averaged.update((id(where), total[0]) for where in total[1])
    for child in child_nodes(node):
        if isinstance(child, ast.stmt):
            _merge(uses, _statement_uses(child, memo))
            continue
        decided = _decided(node, child)
        _visit(child, state if decided is None else decided, unused, uses, averaged, memo)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes(node)`, in its order: compiled, where the
    standard library's generators cost the stage half its time."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(kind._fields)
    children: list[ast.AST] = []
    for field in fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif type(value) is list:
            children.extend(item for item in value if isinstance(item, ast.AST))
    return children


_FIELDS: dict[type, tuple[str, ...]] = {}


def _note(uses: dict[str, bool], name: str, reports: bool) -> None:
    if not reports or name not in uses:
        uses[name] = reports


def _averaged(node: ast.AST) -> Optional[tuple[str, tuple[ast.AST, ...]]]:
    """For `total /= n` or `total = total / n`, the total and where it occurs."""
    if type(node) is ast_nodes.AugAssign and type(node.op) in _DIVISIONS:
        name = dotted_of(node.target)
        return (name, (node.target,)) if name is not None else None
    if (type(node) is ast_nodes.Assign and len(node.targets) == 1 and type(node.value) is ast_nodes.BinOp
            and type(node.value.op) in _DIVISIONS):
        name = dotted_of(node.targets[0])
        if name is not None and dotted_of(node.value.left) == name:
            return name, (node.targets[0], node.value.left)
    return None


def _identifiers(node: ast.AST) -> list[str]:
    """The names libcst's tree holds as `Name` nodes where CPython's holds
    strings: an attribute's name, a keyword argument's, a parameter's, a
    definition's, an import's, a handler's and a pattern's."""
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.keyword, ast.arg)):
        return [node.arg] if node.arg is not None else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name is not None else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.alias):
        return _dotted_parts(node.name) + ([node.asname] if node.asname else [])
    if isinstance(node, ast.ImportFrom):
        return _dotted_parts(node.module) if node.module else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest is not None else []
    if isinstance(node, ast.MatchClass):
        return list(node.kwd_attrs)
    return []


def _dotted_parts(name: str) -> list[str]:
    """`a.b.c` as libcst's tree holds it: the chain `a.b.c`, `a.b`, and each name."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(len(parts), 1, -1)] + parts


_IDENTIFIER = ast.AST()  # an identifier of the node itself (no node of its own)


def _decided(parent: ast.AST, child: ast.AST) -> Optional[bool]:
    """What `parent` decides for a use under its `child`: it only reports
    (an `.item()`, a print, a log, a number made of it, an f-string), it is
    computed with (a divisor, a statement), or nothing (None: its own
    ancestors decide) — `accumulation._UseFinder._reporting`, one step."""
    if isinstance(parent, ast.Attribute):
        return True if parent.attr in UNGRAPHING_READS else None
    if isinstance(parent, ast.Call):
        return True if _callee_name(parent) in _REPORTING_OR_NUMBER else None
    if isinstance(parent, ast.BinOp):
        return False if type(parent.op) in _DIVISIONS and parent.right is child else None
    if isinstance(parent, ast.JoinedStr):
        return True
    return False if isinstance(parent, ast.stmt) else None


_REPORTING_OR_NUMBER = REPORTING_CALLS | NUMBER_CALLS


def _callee_name(call: ast.Call) -> str:
    func = call.func
    if type(func) is ast_nodes.Name:
        return func.id
    if type(func) is ast_nodes.Attribute:
        return func.attr
    return ""
