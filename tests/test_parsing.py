"""`analysis.parsing.parse_module`: the same tree as libcst's parse, for less;
validation is skipped only by the thread that parses, while it parses.
`files.source_lines`: lines as CPython numbers them."""

from __future__ import annotations

import ast
import gc
import itertools
import os
import threading
import weakref

import libcst as cst
import pytest

from tapelint.analysis.parsing import parse_module
from tapelint.files import source_lines
from tapelint.runner import settle_heap

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures")


def fixture_texts() -> list[str]:
    texts = []
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".py"):
            with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
                texts.append(handle.read())
    return texts


def test_the_tree_equals_libcsts_own_parse_on_every_fixture() -> None:
    texts = fixture_texts()
    assert texts
    for text in texts:
        ours, theirs = parse_module(text), cst.parse_module(text)
        assert ours.deep_equals(theirs)
        assert ours.code == text


def test_a_syntax_error_raises_as_libcst_does_and_leaves_validation_and_collection_on() -> None:
    assert gc.isenabled()
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def f(:\n")
    assert gc.isenabled()
    with pytest.raises(cst.CSTValidationError):  # a node built by hand is still checked
        cst.Name("not a name")


def test_the_collector_stays_off_when_the_caller_had_turned_it_off() -> None:
    gc.disable()
    try:
        parse_module("x = 1\n")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_another_thread_building_nodes_during_a_parse_is_still_validated() -> None:
    """The skip is keyed by the parsing thread: a node another thread builds
    meanwhile is checked (a fix built while the worker parses)."""
    started, errors = threading.Event(), []
    text = "\n".join(f"v{i} = f(a{i}, b={i})" for i in range(20_000)) + "\n"

    def build() -> None:
        started.wait()
        for _ in range(2_000):
            try:
                cst.Name("not a name")
            except cst.CSTValidationError:
                errors.append(1)

    builder = threading.Thread(target=build)
    builder.start()
    started.set()
    parse_module(text)
    builder.join()
    assert len(errors) == 2_000


def test_settle_heap_collects_the_last_files_cycles_and_freezes_the_rest() -> None:
    class Cycle:
        pass

    a = Cycle()
    a.me = a  # type: ignore[attr-defined]
    gone = weakref.ref(a)
    del a
    kept = Cycle()
    try:
        settle_heap()
        assert gone() is None  # collected, not frozen with the survivors
        assert gc.get_freeze_count() > 0 and kept is not None
    finally:
        gc.unfreeze()


_BREAKS = ("\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


@pytest.mark.parametrize("others", [(), *((b,) for b in _BREAKS[3:]), _BREAKS[3:]],
                         ids=["only-cpython-breaks", *(hex(ord(b)) for b in _BREAKS[3:]), "all"])
def test_source_lines_number_lines_as_cpython_does(others: tuple[str, ...]) -> None:
    # Every statement `x<i> = 0` must sit on the line CPython gives it, with
    # `\v`, `\f`, `\x1c`... (which `str.splitlines` breaks at) inside lines.
    for breaks in itertools.product(("\n", "\r\n", "\r"), repeat=3):
        text = "".join(f"x{i} = 0  # {''.join(others)}{end}" for i, end in enumerate(breaks)) + "y = 1"
        lines = source_lines(text)
        assert "".join(lines) == text
        for stmt in ast.parse(text).body:
            target = stmt.targets[0]  # type: ignore[attr-defined]
            assert lines[stmt.lineno - 1].startswith(f"{target.id} =")
        assert len(lines) == 4
    assert source_lines("") == [] and source_lines("a\n") == ["a\n"] and source_lines("a\n\n") == ["a\n", "\n"]


def test_source_lines_of_every_fixture_join_to_its_text_and_count_as_cpython_does() -> None:
    for text in fixture_texts():
        lines = source_lines(text)
        assert "".join(lines) == text
        last = max((getattr(node, "end_lineno", 0) or 0 for node in ast.walk(ast.parse(text))), default=0)
        assert len(lines) >= last


def test_nodes_hash_by_identity_in_c() -> None:
    """Every node class libcst defines hashes with `object.__hash__` (the
    same identity hash as libcst's Python method, without the call); two
    equal-looking nodes stay two keys."""
    classes = [getattr(cst, name) for name in dir(cst)]
    nodes = [kind for kind in classes if isinstance(kind, type) and issubclass(kind, cst.CSTNode)]
    assert len(nodes) > 100
    assert all(kind.__hash__ is object.__hash__ for kind in nodes)
    first, second = cst.Name("x"), cst.Name("x")
    assert first.deep_equals(second) and first != second
    assert {first: 1, second: 2}[first] == 1 and len({first, second}) == 2
    assert hash(first) == hash(first) and first in {first}
