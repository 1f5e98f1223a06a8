"""The literal values of a call's arguments, for tables keyed on them.

`nn.Upsample(scale_factor=2)` saves nothing and `nn.Upsample(mode="area")`
saves its input: the op table decides by constructor arguments, and this
module reads them from the syntax. Only Python literals count; anything else
is `NOT_LITERAL`, so the table falls back to its conservative answer.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

import libcst as cst

NOT_LITERAL = object()  # an argument whose value the syntax does not tell

Arguments = dict[Union[int, str], object]  # position or keyword -> literal value


def _hashable(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def _literal(expr: cst.BaseExpression) -> object:
    try:
        return _hashable(ast.literal_eval(cst.Module([]).code_for_node(expr)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def call_arguments(call: cst.Call) -> Optional[Arguments]:
    """Positional arguments by index and keyword arguments by name; None when
    a `*args` or `**kwargs` hides which argument is which."""
    arguments: Arguments = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        arguments[arg.keyword.value if arg.keyword is not None else index] = _literal(arg.value)
    return arguments
