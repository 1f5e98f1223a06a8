"""The rule contract: a small class per rule, its documentation and its
tested examples side by side (Fixit's style), its logic a thin view over the
hazards that the analysis found (see `analysis.md`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, Iterator

import libcst as cst

from tapelint.analysis.model import Hazard, HazardKind
from tapelint.diagnostics import (
    Diagnostic,
    Edit,
    Fix,
    FixKind,
    Range,
    Related,
    Role,
    Safety,
    Semantics,
    Severity,
)


@dataclass(frozen=True)
class ReportContext:
    """What a rule needs to turn a hazard into a diagnostic: the path as the
    user gave it, the module, and positions (computed lazily, only for the
    nodes a diagnostic names)."""

    path: str
    module: cst.Module
    range_of: Callable[[cst.CSTNode], Range]

    def line_of(self, node: cst.CSTNode) -> int:
        return self.range_of(node).start.line

    def code_of(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()


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


def fails_under(torch: bool) -> tuple[Semantics, ...]:
    """A hazard fails under torch only if a reused node saved tensors; every
    hazard fails under a strict tape."""
    return (Semantics.TORCH, Semantics.STRICT) if torch else (Semantics.STRICT,)


def semantics_note(hazard: Hazard) -> str:
    """The part of a message that says under which semantics it fails, and
    what that verdict assumes."""
    if not hazard.fails_under_torch:
        return (" PyTorch runs this (nothing on the reused part saves tensors for backward),"
                " but a strict tape such as burn's rejects it.")
    if hazard.saves_assumed:
        return (f" (This assumes `{hazard.op}` saves tensors for backward, as tapelint assumes"
                " for calls it cannot see into.)")
    return ""


def reuse_related(hazard: Hazard, ctx: ReportContext) -> tuple[Related, ...]:
    """The definition, the backward that frees it, and the one that fails."""
    related = [Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                       f"`{hazard.value}` is created here")]
    if hazard.first_backward is not None:
        related.append(Related(Role.FIRST_BACKWARD, ctx.path, ctx.range_of(hazard.first_backward.call),
                               "this backward frees its graph"))
    if hazard.fails_at is not None:
        related.append(Related(Role.FAILS_AT, ctx.path, ctx.range_of(hazard.fails_at.call),
                               "this backward walks it again and fails"))
    return tuple(related)


def detach_fix(hazard: Hazard, ctx: ReportContext, description: str) -> Fix:
    """`expr` -> `expr.detach()` at the definition (parenthesised when needed)."""
    code = ctx.code_of(hazard.definition)
    atom = isinstance(hazard.definition, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
    new_text = f"{code}.detach()" if atom else f"({code}).detach()"
    return Fix(FixKind.DETACH, Safety.UNSAFE, description, (Edit(ctx.range_of(hazard.definition), new_text),))


def loop_phrase(hazard: Hazard, ctx: ReportContext) -> str:
    loop = hazard.loop
    if loop is None:
        return "the loop"
    if loop.implicit:
        return f"`{loop.node.name.value}()`, which runs once per training step"
    return f"the loop at line {ctx.line_of(loop.node)}"
