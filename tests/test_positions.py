"""`positions.StatementPositions`: the positions libcst's `PositionProvider`
gives, for every node, computed one top-level statement at a time (or for
the whole module where a statement's first line cannot be established)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from test_children import _nodes, _sources

from tapelint.analysis.names import ModuleNames
from tapelint.analysis.parsing import parse_module
from tapelint.positions import StatementPositions

AWKWARD = [
    "x = 1",  # no newline at the end of the file
    "x = 1\r\ny = (\r\n    2)\r\n",  # CRLF
    "x = 1\ry = 2\r",  # old Mac line ends
    "a = 1; b = 2\n\n\n# comment\nc = 3  # trailing\n",  # two statements on one line
    "@(\n    decorator\n)\ndef f():\n    pass\n",  # a decorator CPython places a line lower
    "(\n    a\n).b = 1\n(\n  c\n)\n",  # a statement that starts with a parenthesis
    "x = 1 \\\n    + 2\n\x0cy = 3\n",  # a backslash continuation, a form feed
    "# only a comment\n",
    "\n\n\nif x:\n    pass\nelif y:\n    pass\nelse:\n    pass\n# footer\n",
    "class A:\n    @property\n    # between\n    @other\n    def f(self): return 1\n",
]


def _compare(source: str) -> StatementPositions:
    module = parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lazy = StatementPositions(module, source, ModuleNames(module))
    for node in _nodes(module):
        if node in expected:
            assert lazy[node] == expected[node], (type(node).__name__, source[:80])
    return lazy


def test_every_node_is_where_libcst_places_it() -> None:
    for source in _sources() + AWKWARD:
        _compare(source)


def test_a_node_needs_only_its_own_statement_placed() -> None:
    source = "x = 1\n\n\ndef f():\n    return x\n\n\ny = f()\n"
    module = parse_module(source)
    lazy = StatementPositions(module, source, ModuleNames(module))
    call = module.body[2].body[0].value
    assert (lazy[call].start.line, lazy[call].start.column) == (8, 4)
    assert lazy.whole is None  # the module was never generated as a whole
    assert not set(lazy.known) & set(_nodes(module.body[1]))  # nor the function's statement


def test_a_statement_the_parsers_place_differently_falls_back_to_the_whole_module() -> None:
    lazy = _compare(AWKWARD[4])
    assert lazy.whole is not None


def test_a_node_of_another_tree_is_not_found() -> None:
    module = parse_module("x = 1\n")
    lazy = StatementPositions(module, "x = 1\n", ModuleNames(module))
    try:
        lazy[cst.Name("x")]
    except KeyError:
        return
    raise AssertionError("a foreign node was given a position")
