"""Reparsing an edited module from its previous tree: only the top-level
statements an edit touched are parsed again, every other statement keeps
its node (so the language server's keystroke pays for the statement being
typed in, not for the file: a third of a 300-line file's lint was its parse).

The result is exactly the tree a whole parse of the new text gives, or
nothing (then the caller parses the whole text). libcst's parse of a module
is a sequence of top-level statements, each owning the blank and comment
lines before it (`leading_lines`), parsed from a tokenizer at the start of
a line, at indentation 0, outside any bracket or string. So the statements
before the edit and after it parse as they did, provided that:

- the edited span is parsed with the statement before it and the one after
  it, which decide the span's two borders (an indented comment after a
  block belongs to the block: `IndentedBlock.footer`), and the parse
  partitions the text as the old tree did: the span's statements make up
  exactly its text, the next statement owns the same leading lines;
- the span starts after the first statement (the module's `header` is its
  own rule), so after the first line break (which sets `default_newline`);
- the module's `default_indent` (the first indented block's indentation,
  which a block's `indent` is written relative to) stays what it was: the
  span is parsed after a synthetic block of that indentation when an
  unchanged statement before it holds the first indented block, and
  otherwise the span itself must infer the same;
- the text ends with a line break, as the old one did (`has_trailing_newline`).

`tests/test_reparse.py` compares the result with a whole parse
(`deep_equals` and the module's fields) on edits made to the fixtures and
to hand-picked borders.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.children import children_of
from tapelint.analysis.parsing import parse_module

# Past this share of the new text, a whole parse costs about the same.
_MAX_SHARE = 0.5


@dataclass(frozen=True)
class Layout:
    """Where each top-level statement of a module's text starts (its leading
    lines included), then where its footer starts; `first_block`, the index
    of the first statement holding an indented block (None: none does)."""

    starts: tuple[int, ...]
    first_block: Optional[int]

    @staticmethod
    def of(module: cst.Module, text: str) -> Optional[Layout]:
        """The layout of `module` parsed from `text` (None when its code is not `text`)."""
        if not module.has_trailing_newline or not module.body:
            return None
        offset = sum(len(module.code_for_node(line)) for line in module.header)
        starts = []
        for stmt in module.body:
            starts.append(offset)
            offset += len(module.code_for_node(stmt))
        starts.append(offset)
        footer = sum(len(module.code_for_node(line)) for line in module.footer)
        if offset + footer != len(text):
            return None
        first_block = next((index for index, stmt in enumerate(module.body) if _holds_block(stmt)), None)
        return Layout(tuple(starts), first_block)


def reparse(old_text: str, old: cst.Module, layout: Layout, text: str) -> Optional[tuple[cst.Module, Layout]]:
    """The tree of `text` (an edit of `old_text`, whose tree is `old` laid out
    as `layout`) and its layout, reusing the nodes of the statements the edit
    left alone; None when only a whole parse can tell."""
    if not text.endswith(("\n", "\r")):
        return None
    prefix = _common_prefix(old_text, text)
    suffix = _common_suffix(old_text, text, prefix)
    old_end = len(old_text) - suffix  # the edit replaced old_text[prefix:old_end] ...
    body, starts = old.body, layout.starts
    count = len(body)
    first = bisect.bisect_right(starts, prefix, 0, count) - 1
    if first < 1:
        return None  # in the header or the first statement: a whole parse decides those
    last = bisect.bisect_right(starts, max(old_end - 1, prefix), 0, count) - 1
    delta = len(text) - len(old_text)
    begin = starts[first]
    to_end = last == count - 1  # the span runs to the end of the text, the footer included
    end = len(text) if to_end else starts[last + 1] + delta
    if end - begin > _MAX_SHARE * len(text):
        return None
    before = old_text[starts[first - 1]:begin]
    # The statement after the span, then a stand-in for the one after it (or
    # the footer, when it is the last): what follows decides its borders.
    following = last + 2 < count
    after = "" if to_end else old_text[starts[last + 1]:starts[last + 2] if following else len(old_text)]
    newline = old.default_newline
    inherit_indent = layout.first_block is not None and layout.first_block < first
    opening = f"if 1:{newline}{old.default_indent}pass{newline}" if inherit_indent else f"pass{newline}"
    closing = f"pass{newline}" if not to_end and following else ""
    try:
        parsed = parse_module(opening + before + text[begin:end] + after + closing)
    except Exception:  # noqa: BLE001 - whatever it was, a whole parse reports it
        return None
    if parsed.default_newline != newline or parsed.default_indent != old.default_indent:
        return None
    if not inherit_indent and not any(_holds_block(s) for s in parsed.body):
        return None  # the first indented block may lie further on: a whole parse finds it
    middle = list(parsed.body[2:len(parsed.body) - (0 if to_end else 1 + (closing != ""))])
    lengths = [len(parsed.code_for_node(stmt)) for stmt in middle]
    span_footer = sum(len(parsed.code_for_node(line)) for line in parsed.footer) if to_end else 0
    # The span's statements make up its text and the next statement owns the
    # lines it owned: no neighbour claimed lines of the span, nor the span theirs.
    if sum(lengths) + span_footer != end - begin:
        return None
    if not to_end and not _same_lines(parsed.body[2 + len(middle)].leading_lines, body[last + 1].leading_lines):
        return None
    module = cst_nodes.Module(
        body=[*body[:first], *middle, *body[last + 1:]],
        header=old.header,
        footer=parsed.footer if to_end else old.footer,
        encoding=old.encoding,
        default_indent=old.default_indent,
        default_newline=newline,
        has_trailing_newline=True,
    )
    new_starts = list(starts[:first])
    offset = begin
    for length in lengths:
        new_starts.append(offset)
        offset += length
    new_starts.extend(start + delta for start in starts[last + 1:count])
    if not to_end:
        new_starts.append(starts[count] + delta)  # the footer
    else:
        new_starts.append(offset)
    first_block = layout.first_block if inherit_indent else next(
        index for index, stmt in enumerate(module.body) if index >= first and _holds_block(stmt))
    return module, Layout(tuple(new_starts), first_block)


def _same_lines(a: Sequence[cst.EmptyLine], b: Sequence[cst.EmptyLine]) -> bool:
    return len(a) == len(b) and all(x.deep_equals(y) for x, y in zip(a, b))


def _holds_block(node: cst.CSTNode) -> bool:
    """Does `node` hold an indented block (an INDENT token)?"""
    if type(node) is cst_nodes.SimpleStatementLine:
        return False
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst_nodes.IndentedBlock:
            return True
        if isinstance(current, cst.BaseExpression):
            continue  # an expression holds no statement
        stack.extend(children_of(current))
    return False


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (slices compared in C, halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, prefix: int) -> int:
    """The length of the longest common suffix not reaching into `prefix`."""
    low, high = 0, min(len(a), len(b)) - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
