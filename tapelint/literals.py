"""The literal values of a call's arguments, for tables keyed on them.

`nn.Upsample(scale_factor=2)` saves nothing and `nn.Upsample(mode="area")`
saves its input: the op table decides by constructor arguments, and this
module reads them from the syntax. Only Python literals count; anything else
is `NOT_LITERAL`, so the table falls back to its conservative answer.
"""

from __future__ import annotations

from typing import Optional, Union

import libcst as cst

NOT_LITERAL = object()  # an argument whose value the syntax does not tell

Arguments = dict[Union[int, str], object]  # position or keyword -> literal value


def _literal(expr: cst.BaseExpression) -> object:
    """The value of a literal (numbers, strings, None/True/False, negation,
    tuples and lists of literals, lists as tuples so they hash)."""
    # By hand, not `ast.literal_eval`: its recursive closure is a reference
    # cycle per call, and a lint must leave none (tests/test_parallel_runner.py).
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", ""))
    if isinstance(expr, cst.SimpleString):
        plain = "b" not in expr.prefix.lower() and "\\" not in expr.raw_value
        return expr.raw_value if plain else NOT_LITERAL
    if isinstance(expr, cst.Name):
        return _NAMED.get(expr.value, NOT_LITERAL)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        value = _literal(expr.expression)
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else NOT_LITERAL
    if isinstance(expr, (cst.Tuple, cst.List)):
        items = tuple(_literal(e.value) if isinstance(e, cst.Element) else NOT_LITERAL for e in expr.elements)
        return NOT_LITERAL if NOT_LITERAL in items else items
    return NOT_LITERAL


_NAMED = {"None": None, "True": True, "False": False}


def call_arguments(call: cst.Call) -> Optional[Arguments]:
    """Positional arguments by index and keyword arguments by name; None when
    a `*args` or `**kwargs` hides which argument is which."""
    arguments: Arguments = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        arguments[arg.keyword.value if arg.keyword is not None else index] = _literal(arg.value)
    return arguments
