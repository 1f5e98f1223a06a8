"""Fast walks over statements.

libcst's visitors rebuild every node they pass (`_visit_and_replace_children`),
which costs more than parsing. The analysis only ever needs to find
statements — imports, loops, assignments — so it walks statement bodies by
their fields and never descends into expressions.

What a walk finds depends on the syntax alone, yet the interpreter asks it
again at every pass of a loop and every call of a function: `per_analysis`
computes such a fact once per node while one module's analysis runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import wraps
from typing import Optional, TypeVar

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.children import children_of

_Fact = TypeVar("_Fact")
_MEMOS: list[dict] = []
_MISSING = object()


def per_analysis(fact: Callable[..., _Fact]) -> Callable[..., _Fact]:
    """`fact` (a pure function of nodes and other hashable values, with an
    immutable result) computed once per arguments until `forget()`, which
    each analysis calls when it ends: a memo holds its nodes, and no tree
    may outlive its analysis in a long-lived process (the language server)."""
    memo: dict = {}
    _MEMOS.append(memo)

    @wraps(fact)
    def memoised(*arguments: object) -> _Fact:
        found = memo.get(arguments, _MISSING)
        if found is _MISSING:
            found = memo[arguments] = fact(*arguments)
        return found

    return memoised


def forget() -> None:
    """Drop every `per_analysis` fact."""
    for memo in _MEMOS:
        memo.clear()


def bodies(stmt: cst.CSTNode) -> Iterator[Sequence[cst.CSTNode]]:
    """The statement lists directly inside a compound statement."""
    for name in ("body", "orelse", "finalbody"):
        part = getattr(stmt, name, None)
        if part is None:
            continue
        if type(part) is cst_nodes.If:  # elif
            yield (part,)
            continue
        inner = getattr(part, "body", None)
        if isinstance(inner, (tuple, list)):
            yield inner
        elif type(inner) is cst_nodes.IndentedBlock or type(inner) is cst_nodes.SimpleStatementSuite:
            yield getattr(inner, "body", ())
    for handler in getattr(stmt, "handlers", ()):
        yield handler.body.body
    for case in getattr(stmt, "cases", ()):
        yield case.body.body


def walk_statements(body: Sequence[cst.CSTNode], into_definitions: bool = True) -> Iterator[cst.CSTNode]:
    """Every statement (compound and small) under `body`, in source order."""
    stack = [iter(body)]
    while stack:
        stmt = next(stack[-1], None)
        if stmt is None:
            stack.pop()
            continue
        yield stmt
        if type(stmt) is cst_nodes.SimpleStatementLine:
            yield from stmt.body
            continue
        if not into_definitions and (type(stmt) is cst_nodes.FunctionDef or type(stmt) is cst_nodes.ClassDef):
            continue
        for inner in reversed(list(bodies(stmt))):
            stack.append(iter(inner))


@per_analysis
def self_assignments(fn: cst.FunctionDef) -> tuple[tuple[str, cst.CSTNode], ...]:
    """Each `self.<attr>` that `fn` assigns (plain, augmented, annotated, or
    unpacked from a tuple or list, starred included), with its statement, in
    source order: what a method leaves on its object."""
    found: list[tuple[str, cst.CSTNode]] = []
    for stmt in walk_statements(fn.body.body):
        if type(stmt) is cst_nodes.Assign:
            targets: list[cst.BaseExpression] = [t.target for t in stmt.targets]
        elif type(stmt) in (cst_nodes.AugAssign, cst_nodes.AnnAssign):
            targets = [stmt.target]  # type: ignore[attr-defined]
        else:
            continue
        while targets:
            target = targets.pop(0)
            if type(target) in (cst_nodes.Tuple, cst_nodes.List):
                targets[:0] = [e.value for e in target.elements]  # type: ignore[attr-defined]
            elif type(target) is cst_nodes.StarredElement:
                targets.insert(0, target.value)
            elif (type(target) is cst_nodes.Attribute and type(target.value) is cst_nodes.Name
                  and target.value.value == "self"):
                found.append((target.attr.value, stmt))
    return tuple(found)


def keyword_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    """The argument passed as `name=...`, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def keyword_value(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    arg = keyword_arg(call, name)
    return arg.value if arg is not None else None


def negation(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """`(x, True)` for `not x`, else `(test, False)`."""
    if type(test) is cst_nodes.UnaryOperation and type(test.operator) is cst_nodes.Not:
        return test.expression, True
    return test, False


def isinstance_test(expr: cst.BaseExpression) -> Optional[tuple[cst.BaseExpression, list[cst.BaseExpression]]]:
    """`(v, [A, B])` for `isinstance(v, (A, B))` (`[A]` for `isinstance(v, A)`), else None."""
    if not (type(expr) is cst_nodes.Call and type(expr.func) is cst_nodes.Name and expr.func.value == "isinstance"
            and len(expr.args) == 2 and expr.args[0].keyword is None):
        return None
    classes = expr.args[1].value
    return expr.args[0].value, [e.value for e in classes.elements] if type(classes) is cst_nodes.Tuple else [classes]


def whole_slice(target: cst.Subscript) -> bool:
    """`x[:]`: every element."""
    if len(target.slice) != 1 or type(target.slice[0].slice) is not cst_nodes.Slice:
        return False
    whole = target.slice[0].slice
    return whole.lower is None and whole.upper is None and whole.step is None


def literal_key(target: cst.Subscript) -> Optional[str]:
    """`"loss"` of `d["loss"]`: the key when it is one plain string literal."""
    if len(target.slice) != 1 or type(target.slice[0].slice) is not cst_nodes.Index:
        return None
    index = target.slice[0].slice.value
    return plain_string(index) if type(index) is cst_nodes.SimpleString else None


def walk_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and every node below it, in source order (pre-order)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children_of(node)))


def plain_string(literal: cst.SimpleString) -> Optional[str]:
    """The text of a quoted string without prefix, escapes or triple quotes
    (`"v"`, `'log_pi'`), else None. (Not libcst's `evaluated_value`: its
    `ast.literal_eval` leaves a reference cycle behind at every call, which
    would keep each linted tree alive until a full collection.)"""
    return string_text(literal.value)


def string_text(text: str) -> Optional[str]:
    """`plain_string` of a string literal's source text."""
    quote = text[:1]
    if len(text) < 2 or quote not in ("'", '"') or text[-1] != quote or text[:3] == quote * 3 or "\\" in text:
        return None
    return text[1:-1]
