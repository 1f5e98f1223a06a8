"""The rule contract: a small class per rule, its documentation and its
tested examples side by side (Fixit's style), its logic a thin view over the
hazards that the analysis found (see `docs/analysis.md`), plus the message
helpers rules share. The edits of their fixes live in `tapelint.fixes`."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import ClassVar, Generic, Optional, TypeVar, Union, cast

import libcst as cst

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.anchors import Origin
from tapelint.analysis.findings import (
    AccumulationHazard,
    CarriedHazard,
    Hazard,
    HazardKind,
    HoistedHazard,
    RepeatedHazard,
    ReuseHazard,
    SharedHazard,
    StaleHazard,
)
from tapelint.analysis.model import Retains
from tapelint.diagnostics import Diagnostic, Edit, Fix, Related, Role, Semantics, Severity
from tapelint.fixes.context import SourceContext


@dataclass(frozen=True)
class ReportContext(SourceContext):
    """What a rule needs to turn a hazard into a diagnostic: the path as the
    user gave it, what the fixes read of the module (positions computed
    lazily, only for the nodes a diagnostic names), and, for a hazard placed
    at a call of this file, where its parts really are (`analysis.anchors`)."""

    path: str
    origins: tuple[Origin, ...] = ()

    def origin(self, role: Role) -> Optional[Origin]:
        """Where the part `role` of the hazard being reported really is, when
        it is in another file."""
        return next((o for o in self.origins if o.role is role), None)


@dataclass(frozen=True)
class Invalid:
    """An example the rule must report, with the 1-based line of the primary range.

    `torch` and `strict` declare what running it does under each semantics,
    in the fixtures' header syntax (`ok`, `grows`, `fails LINE [node LINE]`,
    `inplace LINE`); the tests run it on PyTorch and on the engine against them.
    """

    code: str
    line: int
    semantics: str = "torch"  # the profile under which it is reported
    torch: str = ""
    strict: str = ""


@dataclass(frozen=True)
class Valid:
    """An example the rule must not report (under `semantics`); `torch` and
    `strict` as for `Invalid`."""

    code: str
    semantics: str = "torch"
    torch: str = ""
    strict: str = ""


H = TypeVar("H", bound=Hazard)


class Rule(Generic[H]):
    """Base class. Subclasses set the class variables and implement `report`
    for their kind of hazard `H` (the one kind named in `hazard_kinds`)."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    hazard_kinds: ClassVar[frozenset[HazardKind]] = frozenset()
    invalid: ClassVar[tuple[Invalid, ...]] = ()
    valid: ClassVar[tuple[Valid, ...]] = ()

    def check(self, hazards: Iterable[Hazard], ctx: ReportContext, semantics: Semantics) -> Iterator[Diagnostic]:
        """Diagnostics for this rule's hazards that fail under `semantics`
        (the others cost no positions)."""
        for hazard in hazards:
            if hazard.kind in self.hazard_kinds:
                mine = cast(H, hazard)  # each kind is one record type (`analysis.findings`)
                if semantics in self.fails_under(mine):
                    yield self._one_finding(mine, ctx)

    def _one_finding(self, hazard: H, ctx: ReportContext) -> Diagnostic:
        """The diagnostic of a hazard found at more than one site (`others`: the
        other arm of an if/else that walks the released value, or that adds
        into the same total): reported once, each other site a related
        location. A fix keeps edits that are the same for every site (a
        detach at the definition) or that, together, cover every site
        without overlapping (`.item()` in each arm); else it stays a
        suggestion (an edit for one arm would leave the other)."""
        diagnostic = self.report(hazard, ctx)
        others = hazard.others()
        if not others:
            return diagnostic
        variants = [self.report(cast(H, other), ctx) for other in others]
        related = list(diagnostic.related) + [_other_site(other, ctx) for other in others]
        fixes = tuple(_merged_fix(fix, variants) for fix in diagnostic.fixes)
        return replace(diagnostic, related=tuple(related), fixes=fixes)

    def fails_under(self, hazard: H) -> tuple[Semantics, ...]:
        """A reuse fails under torch only if a reused node saved tensors; every
        reuse fails under a strict tape."""
        return (Semantics.TORCH, Semantics.STRICT) if hazard.fails_under_torch else (Semantics.STRICT,)

    def report(self, hazard: H, ctx: ReportContext) -> Diagnostic:
        raise NotImplementedError

    def diagnostic(self, hazard: H, ctx: ReportContext, anchor: cst.CSTNode, message: str,
                   related: tuple[Related, ...] = (), fixes: tuple[Fix, ...] = ()) -> Diagnostic:
        """This rule's diagnostic for `hazard`, pointing at `anchor`."""
        return Diagnostic(
            code=self.code,
            name=self.name,
            severity=self.severity,
            message=message,
            path=ctx.path,
            range=ctx.range_of(anchor),
            fails_under=self.fails_under(hazard),
            related=related,
            fixes=fixes,
        )

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


def semantics_note(hazard: ReuseHazard) -> str:
    """The part of a message that says under which semantics it fails, and
    what that verdict assumes."""
    first = hazard.first_backward
    if hazard.retained and first.inputs and first.retains is not Retains.YES:
        return (" PyTorch runs this only because the earlier `torch.autograd.grad` stops at the tensors it"
                " differentiates with respect to; a strict tape such as burn's consumes the whole graph"
                " and rejects it.")
    if hazard.retained:
        return (" PyTorch runs this only because the earlier backward passes retain_graph=True;"
                " a strict tape such as burn's has no retain_graph and rejects it.")
    if not hazard.fails_under_torch:
        return (" PyTorch runs this (nothing on the reused part saves tensors for backward),"
                " but a strict tape such as burn's rejects it.")
    if hazard.saves_assumed:
        return (f" (This assumes `{hazard.op}` saves tensors for backward, as tapelint assumes"
                " for calls it cannot see into.)")
    return ""


def reuse_related(hazard: ReuseHazard, ctx: ReportContext) -> tuple[Related, ...]:
    """The definition, the backward that frees it, and the one that fails."""
    related = [Related(Role.DEFINITION, ctx.path, ctx.range_of(hazard.definition),
                       f"`{hazard.value}` is created here")]
    related.append(Related(Role.FIRST_BACKWARD, ctx.path, ctx.range_of(hazard.first_backward.call),
                           "this backward frees its graph"))
    related.append(Related(Role.FAILS_AT, ctx.path, ctx.range_of(hazard.fails_at.call),
                           "this backward walks it again and fails"))
    return tuple(related)


def loop_phrase(hazard: Union[HoistedHazard, SharedHazard, RepeatedHazard, CarriedHazard, AccumulationHazard,
                              StaleHazard],
                ctx: ReportContext) -> str:
    loop = hazard.loop
    if loop is None:
        return "the loop"
    if loop.implicit:
        return f"`{loop.step_function}()`, which runs once per training step"
    return f"the loop at line {ctx.line_of(loop.node)}"


def function_of(node: cst.CSTNode, ctx: ReportContext) -> str:
    """The function of this module `node` is written in, as the user names
    it (`Trainer._update`, `make_optimizer`), for a callee's related location."""
    fn = ctx.names.ancestor(node, (cst.FunctionDef,))
    if not isinstance(fn, cst.FunctionDef):
        return "the module"
    owner = ctx.names.ancestor(fn, (cst.ClassDef,))
    return f"{owner.name.value}.{fn.name.value}" if isinstance(owner, cst.ClassDef) else fn.name.value


def assigned_name(site: cst.CSTNode, ctx: ReportContext) -> str:
    """What the user's scope calls the value created at `site`: the name it is
    assigned to there (`d_real = discriminator(real)`), else its source, abbreviated."""
    statement = ctx.names.ancestor(site, (cst.Assign,))
    if isinstance(statement, cst.Assign) and statement.value is site and len(statement.targets) == 1:
        return ctx.code_of(statement.targets[0].target)
    return abbreviate(ctx.code_of(site))


def _other_site(other: Hazard, ctx: ReportContext) -> Related:
    """Where a hazard reported once is found again."""
    if isinstance(other, AccumulationHazard):
        return Related(Role.ACCUMULATOR, ctx.path, ctx.range_of(other.accumulator),
                       "this statement adds into the same total too")
    event = cast(ReuseHazard, other).fails_at
    return Related(Role.FAILS_AT, ctx.path, ctx.range_of(event.call),
                   "this backward walks it again too (another path to the same reuse)")


def _merged_fix(fix: Fix, variants: list[Diagnostic]) -> Fix:
    """`fix` made for every site of a hazard reported once (`Rule._one_finding`)."""
    edits = list(fix.edits)
    for variant in variants:
        same = next((v for v in variant.fixes if v.kind is fix.kind), None)
        if same is None or not same.edits or not edits:
            return replace(fix, edits=())
        edits += [e for e in same.edits if e not in edits]
    ordered = sorted(edits, key=_span)
    if any(_span(b)[0] < _span(a)[1] for a, b in zip(ordered, ordered[1:])):
        return replace(fix, edits=())  # edits made for different sites collide: no sound combination
    return replace(fix, edits=tuple(edits))


def _span(edit: Edit) -> tuple[tuple[int, int], tuple[int, int]]:
    """(start, end) of an edit as (line, column) pairs, for ordering and overlap."""
    return (edit.range.start.line, edit.range.start.column), (edit.range.end.line, edit.range.end.column)

