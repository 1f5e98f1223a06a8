"""Constructor arguments as the op table sees them: literals by position and
keyword, anything else unknown."""

from __future__ import annotations

import libcst as cst
import pytest

from tapelint.literals import NOT_LITERAL, call_arguments


def _args(source: str):
    call = cst.parse_expression(source)
    assert isinstance(call, cst.Call)
    return call_arguments(call)


@pytest.mark.parametrize("source, expected", [
    ("f()", {}),
    ("f(1, 'a', p=0.0)", {0: 1, 1: "a", "p": 0.0}),
    ("f([1, 1], (None, -2))", {0: (1, 1), 1: (None, -2)}),  # lists as tuples: hashable
    ("f(x, mode=m, n=-1, k=1 + 1)", {0: NOT_LITERAL, "mode": NOT_LITERAL, "n": -1, "k": NOT_LITERAL}),
])
def test_literal_arguments(source, expected):
    assert _args(source) == expected


@pytest.mark.parametrize("source", ["f(*a)", "f(1, **kw)"])
def test_unpacked_arguments_hide_every_position(source):
    assert _args(source) is None
