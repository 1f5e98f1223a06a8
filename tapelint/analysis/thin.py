"""A thin parse: the part of a module the analysis can find a hazard in,
with everything else blanked out line for line, so libcst parses a fraction
of a test-heavy file and every kept node keeps its exact line and column.

CPython's `ast` (C, about a tenth of libcst's cost) finds the module's
top-level statements and each class's methods. Kept: every top-level
statement that is not a def or class (module code runs first and its names
reach every function); every def, class or method whose text holds what the
analysis acts on (`precheck.holds_seed`: a backward, `torch.autograd`, a
framework hook, a configured name, or a loop that accumulates); a kept
class's own statements and its special methods (`__init__` fills what
instances hold, `forward`/`__call__` run when an instance is called); and,
to a fixed point, every def, class or method whose name occurs in kept code
(a callee) or whose code names a kept one (a caller: the hazard of calling a
step twice is the caller's). Names are matched as words of the text,
strings and comments included: more is kept, never less.

A thin lint is only trusted when it finds nothing: a file whose thin
analysis finds a hazard is linted again from its whole text, so every
diagnostic, related location and fix is computed from, and applied to, the
real text (`lint.lint_source`). `tests/test_thin.py` lints every fixture both
ways and compares the JSON output; `benchmarks/bench_thin.py` does it on
corpus projects. `TAPELINT_THIN=0` turns it off (the whole text is parsed).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Union

from tapelint.analysis.parsing import python_tree, span
from tapelint.analysis.torch_api import STEP_HOOK_NAMES
from tapelint.files import source_lines
from tapelint.precheck import holds_seed
from tapelint.settings import Settings

ENABLED = os.environ.get("TAPELINT_THIN", "1") != "0"
_WORD = re.compile(r"[A-Za-z_]\w*")
_INDENT = re.compile(r"[ \t]*")
# Methods of a kept class kept whatever they hold: instance state and calls
# of the instance go through them.
_ALWAYS_KEPT_METHODS = frozenset(("forward",)) | STEP_HOOK_NAMES
# A file this small costs less to parse whole than to select from.
MIN_CHARS = 2_000
_Definition = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]


@dataclass(frozen=True)
class _Unit:
    """A def or class (top-level) or a method (`owner`: its class's index)."""

    name: str
    first: int  # 0-based line of its first decorator or keyword
    last: int  # 0-based, inclusive
    words: frozenset[str]
    seed: bool
    owner: Optional[int] = None
    always: bool = False  # kept whenever its class is


def thin_source(source: str, settings: Settings) -> Optional[str]:
    """The thin text of `source` (same lines, the unkept ones empty), or
    None when nothing would be left out or `source` is not worth it."""
    if not ENABLED or len(source) < MIN_CHARS:
        return None
    try:
        tree = python_tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = source_lines(source)
    dropped = _dropped(tree, lines, settings)
    if not dropped:
        return None
    out = list(lines)
    for unit in dropped:
        _blank(out, unit, lines)
    return "".join(out)


def left_out(source: str, tree: ast.Module, settings: Settings) -> frozenset[int]:
    """What `thin_source` leaves out of `source` (parsed: `tree`), as the
    first lines (0-based, decorators included) of the defs, classes and
    methods it empties; empty where it would return None. (The quick tree
    is built from `tree` without them: `quick_tree.quick_module`.)"""
    if not ENABLED or len(source) < MIN_CHARS:
        return frozenset()
    return frozenset(unit.first for unit in _dropped(tree, source_lines(source), settings))


def _dropped(tree: ast.Module, lines: Sequence[str], settings: Settings) -> list[_Unit]:
    units, fixed_words, shells = _units(tree, lines, settings)
    kept = _closure(units, fixed_words, shells)
    return [u for i, u in enumerate(units) if i not in kept and (u.owner is None or u.owner in kept)]


def _units(tree: ast.Module, lines: Sequence[str], settings: Settings
           ) -> tuple[list[_Unit], set[str], dict[int, frozenset[str]]]:
    """The module's defs, classes and methods; the words of the code always
    kept; each class's own words (its text without its methods)."""
    units: list[_Unit] = []
    fixed: set[str] = set()
    shells: dict[int, frozenset[str]] = {}
    for stmt in tree.body:
        first, last = span(stmt)
        text = "".join(lines[first:last + 1])
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            fixed.update(_WORD.findall(text))
            continue
        index = len(units)
        if not isinstance(stmt, ast.ClassDef):
            units.append(_Unit(stmt.name, first, last, frozenset(_WORD.findall(text)), holds_seed(text, settings)))
            continue
        methods = [s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        shell = list(lines[first:last + 1])
        method_units = []
        for method in methods:
            m_first, m_last = span(method)
            m_text = "".join(lines[m_first:m_last + 1])
            name = method.name
            always = name in _ALWAYS_KEPT_METHODS or (name.startswith("__") and name.endswith("__"))
            method_units.append(_Unit(name, m_first, m_last, frozenset(_WORD.findall(m_text)),
                                      holds_seed(m_text, settings), owner=index, always=always))
            for line in range(m_first, m_last + 1):
                shell[line - first] = ""
        shell_text = "".join(shell)
        shells[index] = frozenset(_WORD.findall(shell_text))
        units.append(_Unit(stmt.name, first, last, shells[index], holds_seed(shell_text, settings)))
        units.extend(method_units)
    return units, fixed, shells


def _closure(units: Sequence[_Unit], fixed_words: set[str], shells: dict[int, frozenset[str]]) -> set[int]:
    """The indices of the units kept, to a fixed point: the relevant ones
    (seeds, and callers of relevant ones by name), every unit kept code
    names (callees), and a kept class's special methods. A kept method
    keeps its class's own statements."""
    kept: set[int] = set()
    words = set(fixed_words)  # every word of kept code
    relevant: set[int] = set()  # seeds and their callers
    relevant_names: set[str] = set()

    def keep(index: int) -> None:
        """Keep the unit, its class's statements and, for a class, its special
        methods (a worklist: a recursive closure would be a reference cycle)."""
        stack = [index]
        while stack:
            index = stack.pop()
            if index in kept:
                continue
            unit = units[index]
            kept.add(index)
            words.update(unit.words)
            if unit.owner is not None and unit.owner not in kept:
                stack.append(unit.owner)
            if unit.owner is None and index in shells:
                stack.extend(other for other, method in enumerate(units)
                             if method.owner == index and method.always and other not in kept)

    changed = True
    while changed:
        changed = False
        for index, unit in enumerate(units):
            if index not in relevant and (unit.seed or not unit.words.isdisjoint(relevant_names)):
                relevant.add(index)
                relevant_names.add(unit.name)
            elif index in kept or unit.name not in words:
                continue
            changed = True
            if index not in kept:
                keep(index)
    return kept


def _blank(out: list[str], unit: _Unit, lines: Sequence[str]) -> None:
    """Empty the unit's lines, keeping each line's ending. A method leaves a
    `pass` at its own indentation, so a class whose every method went still
    has a body; a kept class of a dropped one is never asked for."""
    for line in range(unit.first, unit.last + 1):
        text = lines[line]
        out[line] = text[len(text.rstrip("\r\n")):]
    if unit.owner is not None:
        text = lines[unit.first]
        indent = _INDENT.match(text)
        out[unit.first] = (indent.group() if indent else "") + "pass" + out[unit.first]
