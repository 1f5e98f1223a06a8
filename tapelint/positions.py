"""Node positions of the file being linted, one top-level statement at a time.

libcst places nodes (`PositionProvider`) by generating the code of the
whole module, which on a 300-line file costs about as much as parsing it,
however few nodes a finding names. `StatementPositions` places a node by
generating the code of its top-level statement alone: that statement's
first line comes from CPython's own parse of the source (`ast`), and the
code generated for it must equal the source's lines from there on, or (as
for a node outside every statement, or statements the two parsers count
differently) the whole module is placed as libcst does. The positions are
libcst's either way (`tests/test_positions.py` compares every node).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Optional, cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from tapelint.analysis.names import ModuleNames
from tapelint.analysis.parsing import python_tree

# A line ends after "\n", or after "\r" not followed by "\n": libcst's own
# line breaks when it places nodes (`position_provider.NEWLINE_RE`).
_AFTER_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def module_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Every node's position, as `MetadataWrapper.resolve(PositionProvider)`
    gives them, without its second, empty visit of the whole tree."""
    positions = PositionProvider()._gen(MetadataWrapper(module, unsafe_skip_copy=True))
    return cast(Mapping[cst.CSTNode, CodeRange], positions)


class StatementPositions(Mapping[cst.CSTNode, CodeRange]):
    """The positions of `module`'s nodes (parsed from `source`), each
    top-level statement's computed when one of its nodes is first asked for."""

    def __init__(self, module: cst.Module, source: str, names: ModuleNames) -> None:
        self.module = module
        self.source = source
        self.names = names  # the module's parent links, shared with the analysis and the fixes
        self.known: dict[cst.CSTNode, CodeRange] = {}
        self.whole: Optional[Mapping[cst.CSTNode, CodeRange]] = None
        self._indices: Optional[dict[cst.CSTNode, int]] = None  # top-level statement -> its index
        self._first_lines: Optional[list[int]] = None
        self._lines: Optional[list[str]] = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self.known.get(node)
        if found is not None:
            return found
        if self.whole is None:
            index = self._statement_holding(node)
            if index is not None and self._place(index):
                return self.known[node]
            self.whole = module_positions(self.module)
        return self.whole[node]

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def _all(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self.whole is None:
            self.whole = module_positions(self.module)
        return self.whole

    def _statement_holding(self, node: cst.CSTNode) -> Optional[int]:
        """The index of the top-level statement `node` is in (None: in none)."""
        top, parent = node, self.names.parent(node)
        while parent is not None and parent is not self.module:
            top, parent = parent, self.names.parent(parent)
        if parent is None:
            return None
        if self._indices is None:
            self._indices = {statement: index for index, statement in enumerate(self.module.body)}
        return self._indices.get(top)

    def _place(self, index: int) -> bool:
        """Compute the positions of statement `index`'s nodes; False when its
        first line cannot be established."""
        first_lines = self._statement_first_lines()
        if first_lines is None:
            return False
        statement = self.module.body[index]
        state = PositionProvidingCodegenState(self.module.default_indent, self.module.default_newline,
                                              provider=PositionProvider())
        statement._codegen(state)
        placed = cast(dict[cst.CSTNode, CodeRange], state.provider._computed)
        first = _first_syntactic_node(statement)
        if first not in placed:
            return False
        start = first_lines[index] - placed[first].start.line + 1  # where the statement's own code begins
        if not self._matches(start, "".join(state.tokens)):
            return False
        shift = start - 1
        for node, where in placed.items():
            self.known[node] = CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                         CodePosition(where.end.line + shift, where.end.column))
        return True

    def _matches(self, start: int, code: str) -> bool:
        """Is `code` the source's text from line `start` on (the file's last
        statement may lack the newline libcst generates for it)?"""
        if self._lines is None:
            self._lines = _lines_with_ends(self.source)
        generated = _lines_with_ends(code)
        if start < 1:
            return False
        there = self._lines[start - 1 : start - 1 + len(generated)]
        if there == generated:
            return True
        at_end = start - 1 + len(generated) == len(self._lines)
        return at_end and there[:-1] == generated[:-1] and there[-1] + self.module.default_newline == generated[-1]

    def _statement_first_lines(self) -> Optional[list[int]]:
        """The line of each top-level statement's first syntactic token, by
        CPython's parse; None when it does not pair up with libcst's."""
        if self._first_lines is None:
            self._first_lines = _first_lines(self.module, self.source) or []
        return self._first_lines or None


def _first_syntactic_node(statement: cst.BaseStatement) -> cst.CSTNode:
    """The node whose first line CPython's parse reports for `statement`."""
    if isinstance(statement, cst.SimpleStatementLine):
        return statement.body[0]
    decorators = getattr(statement, "decorators", ())
    if decorators:
        return decorators[0].decorator
    return statement


def _first_lines(module: cst.Module, source: str) -> Optional[list[int]]:
    try:
        tree = python_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[int] = []
    position = 0
    for statement in module.body:
        if position >= len(tree.body):
            return None
        first = tree.body[position]
        decorators = getattr(first, "decorator_list", None)
        found.append(decorators[0].lineno if decorators else first.lineno)
        position += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return found if position == len(tree.body) else None


def _lines_with_ends(text: str) -> list[str]:
    lines = _AFTER_LINE_BREAK.split(text)
    return lines[:-1] if lines and not lines[-1] else lines
