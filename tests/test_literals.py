"""Constructor arguments as the op table sees them: literals by position and
keyword, anything else unknown."""

from __future__ import annotations

import gc

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
    ("f(0x10, 1_0.5e1, -0.0, True)", {0: 16, 1: 105.0, 2: -0.0, 3: True}),
    ("f('nearest', r'a', b'x', 'a\\n', f'{m}', -True)",
     {0: "nearest", 1: "a", 2: NOT_LITERAL, 3: NOT_LITERAL, 4: NOT_LITERAL, 5: NOT_LITERAL}),
])
def test_literal_arguments(source, expected):
    assert _args(source) == expected


@pytest.mark.parametrize("source", ["f(*a)", "f(1, **kw)"])
def test_unpacked_arguments_hide_every_position(source):
    assert _args(source) is None


def test_reading_arguments_leaves_no_reference_cycle():
    """The analysis reads them for every module it constructs: no garbage."""
    call = cst.parse_expression("nn.Upsample(None, 2, 'area', k=m, t=(1, [2]))")
    assert isinstance(call, cst.Call)
    gc.collect()
    gc.disable()
    try:
        for _ in range(10):
            call_arguments(call)
        left = gc.collect()
    finally:
        gc.enable()
    assert left == 0
