"""What an edit builder reads of the file it edits: the module, positions
(computed lazily, only for the nodes an edit names), its lines, and the
module's names (`analysis.names`), indexed once per file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import libcst as cst

from tapelint.analysis.names import ModuleNames
from tapelint.diagnostics import Range, split_lines


@dataclass(frozen=True)
class SourceContext:
    module: cst.Module
    range_of: Callable[[cst.CSTNode], Range]
    # The module's names (indexed on first use), shared by every copy of the
    # context made for one file's findings, and by the analysis that placed them.
    names: ModuleNames = field(kw_only=True)
    # The text `module` was parsed from, when the caller has it: the same as
    # `module.code`, which costs a code generation pass over the whole tree.
    text: Optional[str] = field(default=None, kw_only=True)

    def line_of(self, node: cst.CSTNode) -> int:
        return self.range_of(node).start.line

    def code_of(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()

    # Built once per file and only when a fix needs them; they die with the
    # context, so no syntax tree outlives its file.
    @cached_property
    def assigned(self) -> dict[str, list[cst.BaseExpression]]:
        """What each name (or `self.` attribute, by its last name) is assigned,
        indexed once: fixes ask it per finding."""
        index: dict[str, list[cst.BaseExpression]] = {}
        for name, value in self.names.assignments:
            index.setdefault(name, []).append(value)
        return index

    @cached_property
    def lines(self) -> tuple[str, ...]:
        return tuple(split_lines(self.text if self.text is not None else self.module.code))
