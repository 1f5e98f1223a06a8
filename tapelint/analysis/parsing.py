"""libcst's parse, at the cost of the parse alone.

`libcst.parse_module` spends about a third of its time on two things a
linter that only reads the tree does not need (measured on peft's 310 files,
in one process: 4.3 s plain, 2.9 s with both off):

- each node validates itself as it is constructed (`CSTNode.__post_init__`:
  whitespace against regular expressions, balanced parentheses). A tree
  that libcst's own parser built from source is valid by construction;
  libcst's source says as much ("it might make more sense to move
  validation work into the visitor ... avoid validating the tree when
  parsing a file"). Validation is skipped only on the thread that parses,
  only while it parses: nodes built anywhere else (fixes) are still checked.
- the cycle collector runs every few hundred allocations, walking the
  young tree over and over; a tree holds no reference cycles, so nothing
  it finds is garbage. The same holds for CPython's `ast` (`python_tree`),
  which the thin parse and the positions read: in a process holding the
  trees of a project's modules, each pass of the collector over them cost
  a third of `ast.parse` (diffusers, one process).

And every node hashes by identity in C: libcst's `CSTNode.__hash__` is
`return id(self)` in Python, called at every lookup of a dict or set a node
is a key of (the analysis' node store, memos, homes): about a million calls
on four corpus projects, 2-3% of the compiled analysis' instructions.
`object.__hash__` is the same identity hash, without the call. Set at
import, before any tree is built, so no node is ever hashed both ways.
"""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

import libcst as cst
from libcst._nodes.base import CSTNode

_validate_node = CSTNode.__post_init__
# The thread inside `parse_module` (None: none is).
_parsing: Optional[int] = None


def _post_init(node: CSTNode) -> None:
    if threading.get_ident() != _parsing:
        _validate_node(node)


CSTNode.__post_init__ = _post_init  # type: ignore[method-assign,assignment]
_lock = threading.Lock()
_PYTHON_HASH = CSTNode.__dict__["__hash__"]


def _hash_in_c(kind: type) -> None:
    """`kind` and its subclasses hash with `object.__hash__` where they
    have libcst's own (`__init_subclass__` gives each class a copy)."""
    if kind.__dict__.get("__hash__") is _PYTHON_HASH:
        kind.__hash__ = object.__hash__  # type: ignore[assignment]
    subclasses: list[type] = kind.__subclasses__()
    for subclass in subclasses:
        _hash_in_c(subclass)


_hash_in_c(CSTNode)


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module(text)`; raises what it raises."""
    global _parsing
    with _lock, _collector_paused():  # one thread at a time may skip validation
        _parsing = threading.get_ident()
        try:
            return cst.parse_module(text)
        finally:
            _parsing = None


def python_tree(text: str) -> ast.Module:
    """`ast.parse(text)`; raises what it raises."""
    with _collector_paused():
        return ast.parse(text)


@contextmanager
def _collector_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def span(stmt: ast.stmt) -> tuple[int, int]:
    """The 0-based first line (its first decorator's) and last line of `stmt`."""
    first = stmt.lineno
    decorators = getattr(stmt, "decorator_list", ())
    if decorators:
        first = min(first, *(d.lineno for d in decorators))
    end = stmt.end_lineno if stmt.end_lineno is not None else stmt.lineno
    # A decorator's `@` stands on the line of its expression.
    return first - 1, end - 1
