"""The rule contract: a small class per rule, its documentation and its
tested examples side by side (Fixit's style), its logic a thin view over the
hazards that the analysis found (see `analysis.md`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, Iterator

import libcst as cst

from tapelint.analysis.model import Hazard, HazardKind
from tapelint.diagnostics import Diagnostic, Range, Severity


@dataclass(frozen=True)
class ReportContext:
    """What a rule needs to turn a hazard into a diagnostic: the path as the
    user gave it, the source, and positions (computed lazily, only for the
    nodes a diagnostic names)."""

    path: str
    source: str
    range_of: Callable[[cst.CSTNode], Range]

    def line_of(self, node: cst.CSTNode) -> int:
        return self.range_of(node).start.line


@dataclass(frozen=True)
class Invalid:
    """An example the rule must report, with the 1-based line of the primary range."""

    code: str
    line: int
    semantics: str = "torch"  # the profile under which it is reported


@dataclass(frozen=True)
class Valid:
    """An example the rule must not report (under `semantics`)."""

    code: str
    semantics: str = "torch"


class Rule:
    """Base class. Subclasses set the class variables and implement `report`."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    hazard_kinds: ClassVar[frozenset[HazardKind]] = frozenset()
    invalid: ClassVar[tuple[Invalid, ...]] = ()
    valid: ClassVar[tuple[Valid, ...]] = ()

    def check(self, hazards: Iterable[Hazard], ctx: ReportContext) -> Iterator[Diagnostic]:
        for hazard in hazards:
            if hazard.kind in self.hazard_kinds:
                yield self.report(hazard, ctx)

    def report(self, hazard: Hazard, ctx: ReportContext) -> Diagnostic:
        raise NotImplementedError

    @classmethod
    def documentation(cls) -> str:
        """Ruff-style documentation: the docstring's "What it does" and "Why is
        this bad", then "Example" and "Use instead" taken from the tested
        examples, so the documentation can never show code the rule mishandles."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        parts = [f"# {cls.name} ({cls.code})", "", doc]
        if cls.invalid:
            parts += ["", "## Example", "", "```python", cls.invalid[0].code.strip("\n"), "```"]
        if cls.valid:
            parts += ["", "## Use instead", "", "```python", cls.valid[0].code.strip("\n"), "```"]
        return "\n".join(parts) + "\n"
