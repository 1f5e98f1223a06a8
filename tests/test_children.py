"""`analysis.children.children_of`: libcst's `children`, node for node and in
the same order, without rebuilding the node."""

from __future__ import annotations

import os
from collections.abc import Iterator

import libcst as cst
import pytest

from tapelint.analysis import children
from tapelint.analysis.children import children_of
from tapelint.analysis.parsing import parse_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Constructs whose children libcst visits in an order other than their
# fields' (decorators before the name), conditionally (`import *` or
# names), or through parentheses, brackets and whitespace.
VARIED = '''\
# header comment
from __future__ import annotations
from . import (a, b as c)
from x import *
import os.path as p, sys


@decorator(1)
@other
async def f(x: int = 1, /, y=2, *args: str, z, **kw) -> "T":  # trailing
    global g
    async with open(x) as (h, i), j:
        async for k in h:
            yield k
    try:
        pass
    except* (ValueError, TypeError) as e:
        raise RuntimeError() from e
    else:
        del x[1:2, ::3], y.z
    finally:
        return (lambda q, *r: q if r else -q)(1)


class C(Base, metaclass=M):
    a: int = 1
    b = [i for i in range(3) if i] + {k: v for k, v in {}.items()}
    c = {*s, 1}, f"{x!r:>{width}} {y=}", b"raw" rb"x", "implicit" "concat"

    def m(self):
        nonlocal_ = (yield)
        w = await_ = not a and b or c < d <= e is not f in g
        match w:
            case [1, *rest] | {"k": _, **more} if rest:
                pass
            case Point(x=0, y=y) as pt:
                pass
            case _:
                pass
        while True:
            break
        else:
            continue
        x @= y ** -z
        assert x, "message"
        return x[...] if (n := len(x)) else None
'''


def _nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _sources() -> list[str]:
    found = [VARIED]
    for folder in ("fixtures", "tapelint"):
        for directory, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith(".py"):
                    with open(os.path.join(directory, name), encoding="utf-8") as handle:
                        found.append(handle.read())
    return found


def test_children_of_is_libcsts_children_for_every_node_of_varied_code() -> None:
    kinds: set[type] = set()
    for source in _sources():
        for node in _nodes(parse_module(source)):
            kinds.add(type(node))
            expected = node.children
            got = children_of(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), type(node).__name__
    assert len(kinds) > 100  # the sources really span libcst's node classes


def test_a_class_whose_source_cannot_be_read_keeps_libcsts_children(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(_: object) -> str:
        raise OSError("no source")

    monkeypatch.setattr(children.inspect, "getsource", unreadable)
    monkeypatch.setattr(children, "_FIELDS", {})
    call = parse_module("f(a, b=1)\n").body[0].body[0].value
    assert children._visited_fields(cst.Call) is None
    got = children_of(call)
    assert [type(n) for n in got] == [type(n) for n in call.children] and got[0] is call.children[0]
