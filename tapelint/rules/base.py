"""The rule contract: a small class per rule, its documentation and its
tested examples side by side (Fixit's style), its logic a thin view over the
hazards that the analysis found (see `analysis.md`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Callable, ClassVar, Generic, Iterable, Iterator, Optional, Sequence, TypeVar, Union, cast

import libcst as cst

from tapelint.analysis.findings import (
    AccumulationHazard,
    CarriedHazard,
    Hazard,
    HazardKind,
    HoistedHazard,
    RepeatedHazard,
    RetainHazard,
    ReuseHazard,
    SharedHazard,
)
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
    split_lines,
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

    # Built once per file and only when a fix needs them; they die with the
    # context, so no syntax tree outlives its file.
    @cached_property
    def parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        """Child -> parent."""
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack: list[cst.CSTNode] = [self.module]
        while stack:
            node = stack.pop()
            for child in node.children:
                parents[child] = node
                stack.append(child)
        return parents

    @cached_property
    def lines(self) -> tuple[str, ...]:
        return tuple(split_lines(self.module.code))


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
                    yield self.report(mine, ctx)

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


def detach_fix(hazard: HoistedHazard, ctx: ReportContext, description: str) -> Fix:
    """`expr` -> `expr.detach()` at the definition (parenthesised when needed)."""
    new_text = _method(ctx, hazard.definition, "detach")
    return Fix(FixKind.DETACH, Safety.UNSAFE, description, (Edit(ctx.range_of(hazard.definition), new_text),))


def loop_phrase(hazard: Union[HoistedHazard, SharedHazard, RepeatedHazard, CarriedHazard, AccumulationHazard],
                ctx: ReportContext) -> str:
    loop = hazard.loop
    if loop is None:
        return "the loop"
    if loop.implicit:
        return f"`{loop.step_function}()`, which runs once per training step"
    return f"the loop at line {ctx.line_of(loop.node)}"


# --- fix edits ------------------------------------------------------------------
#
# Edits are text ranges from libcst positions, kept minimal so that everything
# around them (formatting, comments) stays byte for byte. A helper returns the
# edits of a fix when the rewrite is mechanical and correct for every shape it
# accepts, and `()` otherwise: `fix_of` then turns the fix into a display-only
# suggestion, so what `--fix` applies is exactly what was checked here.

def fix_of(kind: FixKind, safety: Safety, description: str, edits: tuple[Edit, ...]) -> Fix:
    """A fix with edits, or (no mechanical edit) a display-only suggestion."""
    return Fix(kind, safety if edits else Safety.DISPLAY_ONLY, description, edits)


def _parent(ctx: ReportContext, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    return ctx.parents.get(node)


def _ancestor(ctx: ReportContext, node: cst.CSTNode, kinds: tuple[type, ...]) -> Optional[cst.CSTNode]:
    current = _parent(ctx, node)
    while current is not None and not isinstance(current, kinds):
        current = _parent(ctx, current)
    return current


def _sole_statement(ctx: ReportContext, node: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    """The statement line that holds `node` and nothing else on its line."""
    line = _ancestor(ctx, node, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.SimpleStatementSuite))
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def _siblings(ctx: ReportContext, statement: cst.BaseStatement) -> tuple[Sequence[cst.BaseStatement], int]:
    """The statements of the block holding `statement`, and its index there."""
    block = _parent(ctx, statement)
    if not isinstance(block, (cst.Module, cst.IndentedBlock)):
        return (), -1
    body = block.body
    return body, next(i for i, s in enumerate(body) if s is statement)


def _indent(ctx: ReportContext, statement: cst.CSTNode) -> str:
    line = ctx.lines[ctx.line_of(statement) - 1]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _insert_before(ctx: ReportContext, statement: cst.BaseStatement, lines: Sequence[str]) -> Edit:
    """Insert whole lines above `statement` and its leading comments, at its indentation."""
    indent = _indent(ctx, statement)
    line = ctx.line_of(statement) - len(statement.leading_lines)
    text = "".join(f"{indent}{text}\n" for text in lines)
    return Edit(Range.of(line, 0, line, 0), text)


def _delete_statement(ctx: ReportContext, statement: cst.SimpleStatementLine) -> Edit:
    """Delete a statement's lines (with its trailing comment); `pass` if it is alone in its block."""
    body, _ = _siblings(ctx, statement)
    at = ctx.range_of(statement)
    if len(body) == 1:
        return Edit(at, "pass")
    return Edit(Range.of(at.start.line, 0, at.end.line + 1, 0), "")


def _is_atom(node: cst.CSTNode) -> bool:
    """Can `.method()` follow it without parentheses?"""
    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or bool(getattr(node, "lpar", ()))


def _method(ctx: ReportContext, node: cst.CSTNode, method: str) -> str:
    code = ctx.code_of(node)
    return f"{code}.{method}()" if _is_atom(node) else f"({code}).{method}()"


def _callee_name(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


# The visitors below live at module level and keep their state on the
# instance: a class defined inside a function is a reference cycle, and its
# methods' closures would keep the module's tree alive until the next full
# garbage collection (tests/test_parallel_runner.py checks that linting leaves none).


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, name: cst.Name) -> None:
        self.names.add(name.value)

    def visit_Attribute(self, attribute: cst.Attribute) -> bool:
        attribute.value.visit(self)
        return False

    def visit_Arg(self, arg: cst.Arg) -> bool:
        arg.value.visit(self)
        return False


def _names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier read or written in `node` (attribute names and keyword names excluded)."""
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


class _BindingCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.bound: set[str] = set()

    def _targets(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.bound.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)


def _bound_in(node: cst.CSTNode) -> set[str]:
    """Every identifier `node` binds: assignment, loop, `with ... as`, walrus, comprehension targets."""
    collector = _BindingCollector()
    node.visit(collector)
    return collector.bound


def _uses_outside(ctx: ReportContext, names: set[str], inside: tuple[cst.CSTNode, ...]) -> bool:
    """Is any of `names` mentioned anywhere in the module outside the `inside` subtrees?"""
    finder = _UseFinder(ctx, names, set(inside))
    ctx.module.visit(finder)
    return finder.found


class _UseFinder(cst.CSTVisitor):
    def __init__(self, ctx: ReportContext, names: set[str], hidden: set[cst.CSTNode]) -> None:
        super().__init__()
        self.ctx, self.names, self.hidden = ctx, names, hidden
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node in self.hidden or self.found:
            return False
        if isinstance(node, cst.Name) and node.value in self.names:
            parent = _parent(self.ctx, node)
            if not (isinstance(parent, cst.Attribute) and parent.attr is node) and not (
                isinstance(parent, cst.Arg) and parent.keyword is node
            ):
                self.found = True
        return True


# TL001 (and TL004's loop flavour): compute the value inside the loop.


def recompute_edits(hazard: Union[HoistedHazard, RepeatedHazard], ctx: ReportContext) -> tuple[Edit, ...]:
    """Move the statement that creates the value into the top of the loop body
    (copy it there when the names it binds are also read elsewhere).

    Only when that is the same computation: one plain assignment to names,
    just before the loop in the same block; the loop reads what it binds; no
    name it reads is rebound between it and the loop or inside the loop; and
    the loop does not rebind what it binds (that would be carried state)."""
    loop = hazard.loop
    if loop is None or loop.implicit or not isinstance(loop.node, (cst.For, cst.While)):
        return ()
    if not isinstance(loop.node.body, cst.IndentedBlock):
        return ()
    statement = _sole_statement(ctx, hazard.definition)
    if statement is None or not isinstance(statement.body[0], cst.Assign):
        return ()
    assign = statement.body[0]
    targets = _bound_in(assign)
    if not targets or any(not _plain_target(t.target) for t in assign.targets):
        return ()
    body, index = _siblings(ctx, statement)
    loop_index = next((i for i, s in enumerate(body) if s is loop.node), -1)
    if index < 0 or loop_index <= index:
        return ()
    between = body[index + 1 : loop_index]
    rebound = set().union(*(_bound_in(s) for s in between), _bound_in(loop.node))
    if not (targets & _names_in(loop.node.body)) or (_names_in(assign.value) & rebound) or (targets & rebound):
        return ()
    code = ctx.module.code_for_node(assign)
    move = not _uses_outside(ctx, targets, (statement, loop.node.body))
    comment = statement.trailing_whitespace.comment
    if move and comment is not None:
        code += f"  {comment.value}"
    first = loop.node.body.body[0]
    edits = [_insert_before(ctx, first, [code])]
    if move:
        edits.insert(0, _delete_statement(ctx, statement))
    return tuple(edits)


def _plain_target(target: cst.BaseAssignTargetExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements)


# TL002/TL006: add the losses and call backward once.


def combine_edits(hazard: Union[SharedHazard, RetainHazard], ctx: ReportContext) -> tuple[Edit, ...]:
    """`a.backward(retain_graph=True)` / `a.backward()` then `b.backward()` as
    consecutive statements of one block -> `(a + b).backward()`. The chain runs
    from the first backward through the failing one and on, while the last one
    still retains, to the first that does not. No edit when another statement
    or a comment sits in between, or a backward takes any other argument."""
    first, last = hazard.first_backward, hazard.fails_at
    if first is last:
        return ()
    start = _backward_statement(ctx, first.call)
    end = _backward_statement(ctx, last.call)
    if start is None or end is None:
        return ()
    body, i = _siblings(ctx, start)
    _, j = _siblings(ctx, end)
    if i < 0 or j <= i or body[j] is not end:
        return ()
    while _retains(_backward_call(body[j])):
        j += 1
        if j >= len(body) or _backward_call(body[j]) is None:
            return ()
    chain = list(body[i : j + 1])
    calls = [_backward_call(s) for s in chain]
    if any(c is None for c in calls) or any(c.args and not _retains(c) for c in calls):
        return ()
    if any(s.trailing_whitespace.comment is not None for s in chain[:-1]) or any(
        e.comment is not None for s in chain[1:] for e in s.leading_lines
    ):
        return ()
    roots = [c.func.value for c in calls]
    total = " + ".join(ctx.code_of(r) if _is_atom(r) else f"({ctx.code_of(r)})" for r in roots)
    at = Range(ctx.range_of(chain[0]).start, ctx.range_of(chain[-1]).end)
    return (Edit(at, f"({total}).backward()"),)


def _backward_call(statement: cst.BaseStatement) -> Optional[cst.Call]:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    expr = statement.body[0]
    if not isinstance(expr, cst.Expr) or not isinstance(expr.value, cst.Call):
        return None
    func = expr.value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward":
        return expr.value
    return None


def _backward_statement(ctx: ReportContext, call: cst.CSTNode) -> Optional[cst.SimpleStatementLine]:
    statement = _parent(ctx, _parent(ctx, call) or call)
    if isinstance(statement, cst.SimpleStatementLine) and _backward_call(statement) is call:
        return statement
    return None


def _retains(call: cst.Call) -> bool:
    """Exactly `retain_graph=True` and nothing else."""
    return (
        len(call.args) == 1
        and call.args[0].keyword is not None
        and call.args[0].keyword.value == "retain_graph"
        and isinstance(call.args[0].value, cst.Name)
        and call.args[0].value.value == "True"
    )


# TL002: detach the shared value on the first loss's branch.


def branch_detach_edits(hazard: SharedHazard, ctx: ReportContext) -> tuple[Edit, ...]:
    """`d_loss = bce(D(fake), zeros)` -> `bce(D(fake.detach()), zeros)`: the
    shared name, where the first backward's loss is assigned (the nearest
    assignment before that backward, in its block), passed to a call of a
    name or `self.` attribute. Such a call is taken to be a module with its
    own parameters, so the first loss still reaches parameters after the
    detach (a bare `h.sum()` would not: no edit there)."""
    first = hazard.first_backward
    if not hazard.value.isidentifier():
        return ()
    statement = _backward_statement(ctx, first.call)
    root = first.call.func.value if statement is not None else None
    if not isinstance(root, cst.Name):
        return ()
    body, index = _siblings(ctx, statement)
    assign = next((a for a in map(_single_assign, reversed(body[:index])) if a is not None and a[0] == root.value), None)
    if assign is None:
        return ()
    edits = []
    for call in _calls_in(assign[1]):
        func = call.func
        module_call = isinstance(func, cst.Name) or (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
        )
        for arg in call.args if module_call else ():
            if arg.keyword is None and isinstance(arg.value, cst.Name) and arg.value.value == hazard.value:
                edits.append(Edit(ctx.range_of(arg.value), f"{hazard.value}.detach()"))
    return tuple(edits)


def _single_assign(statement: cst.BaseStatement) -> Optional[tuple[str, cst.BaseExpression]]:
    """(name, value) of `name = value` alone on its line."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        assign = statement.body[0]
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value, assign.value
    return None


class _CallCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[cst.Call] = []

    def visit_Call(self, call: cst.Call) -> None:
        self.calls.append(call)


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    collector = _CallCollector()
    node.visit(collector)
    return collector.calls


# TL004: remove the repeated backward.


def remove_edits(hazard: RepeatedHazard, ctx: ReportContext) -> tuple[Edit, ...]:
    """Delete the failing backward when it is a statement of its own (an
    assigned `g = torch.autograd.grad(...)` is kept: its result is used)."""
    if hazard.first_backward is hazard.fails_at:
        return ()
    call = hazard.fails_at.call
    expr = _parent(ctx, call)
    statement = _parent(ctx, expr) if isinstance(expr, cst.Expr) else None
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return ()
    return (_delete_statement(ctx, statement),)


# TL003: accumulate a number (or a graph-free tensor) instead.


class TotalUse(str, Enum):
    """What the code does with a running total besides accumulating into it."""

    NUMERIC = "numeric"  # reported or used in arithmetic: a float works as well as a tensor
    TENSOR = "tensor"  # read as a tensor (`total.item()`), never backwarded
    OTHER = "other"  # anything else: returned, stored, iterated, passed on


REPORTING_CALLS = frozenset({"print", "info", "debug", "warning", "warn", "error", "critical", "add_scalar"})
# Functions of a number that return a number or its text.
NUMERIC_CALLS = frozenset({"float", "int", "round", "abs", "str", "repr", "format", "bool"})
# Functions of a list of numbers that return a number.
REDUCING_CALLS = frozenset({"sum", "min", "max", "mean", "fmean", "median", "len"})
TENSOR_READS = frozenset({"item", "tolist"})
LOSS_FUNCTIONS = frozenset({"cross_entropy", "nll_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits"})


def accumulated_value(hazard: AccumulationHazard) -> Optional[cst.BaseExpression]:
    """The expression added to the total: `total += v`, `total = total + v`, `xs.append(v)`."""
    statement = hazard.accumulator
    if isinstance(statement, cst.AugAssign) and isinstance(statement.operator, cst.AddAssign):
        return statement.value
    if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.BinaryOperation):
        value = statement.value
        target = statement.targets[0].target
        if isinstance(value.operator, cst.Add):
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                if mine.deep_equals(target):
                    return other
    if isinstance(statement, cst.Call) and _callee_name(statement) == "append" and len(statement.args) == 1:
        return statement.args[0].value
    return None


def total_use(hazard: AccumulationHazard, ctx: ReportContext) -> TotalUse:
    """The least forgiving use of the total anywhere in the module (other than
    binding or accumulating into it). Names are matched by spelling, not by
    scope, so a same-named variable elsewhere can only make this stricter."""
    target = hazard.accumulator_target
    is_list = isinstance(hazard.accumulator, cst.Call)
    uses: list[cst.CSTNode] = []
    if isinstance(target, cst.Name):
        uses = _names_matching(ctx, lambda n: isinstance(n, cst.Name) and n.value == target.value)
    elif isinstance(target, cst.Attribute):
        uses = _names_matching(ctx, lambda n: isinstance(n, cst.Attribute) and n.attr.value == target.attr.value)
    elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        base = target.value.value
        for name in _names_matching(ctx, lambda n: isinstance(n, cst.Name) and n.value == base):
            parent = _parent(ctx, name)
            if isinstance(parent, cst.Subscript) and parent.value is name:
                if parent.deep_equals(target):
                    uses.append(parent)
                elif not _constant_key(parent):
                    return TotalUse.OTHER  # `metrics[k]` might be the total
            elif _binding(ctx, name):
                continue
            elif _use_kind(ctx, name, as_list=True) is not TotalUse.NUMERIC:
                return TotalUse.OTHER  # the whole dict, other than printed
    else:
        return TotalUse.OTHER
    kinds = {
        _use_kind(ctx, use, as_list=is_list)
        for use in uses
        if not _within(ctx, use, hazard.accumulator) and not _binding(ctx, use)
    }
    for kind in (TotalUse.OTHER, TotalUse.TENSOR):
        if kind in kinds:
            return kind
    return TotalUse.NUMERIC


def _names_matching(ctx: ReportContext, predicate: Callable[[cst.CSTNode], bool]) -> list[cst.CSTNode]:
    """Nodes satisfying `predicate`, except attribute names and keyword names."""
    return [
        node
        for node, parent in ctx.parents.items()
        if predicate(node)
        and not (isinstance(parent, cst.Attribute) and parent.attr is node)
        and not (isinstance(parent, cst.Arg) and parent.keyword is node)
    ]


def _constant_key(subscript: cst.Subscript) -> bool:
    return len(subscript.slice) == 1 and isinstance(
        getattr(subscript.slice[0].slice, "value", None), (cst.SimpleString, cst.Integer)
    )


def _within(ctx: ReportContext, node: cst.CSTNode, ancestor: Optional[cst.CSTNode]) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = _parent(ctx, node)
    return False


def _binding(ctx: ReportContext, node: cst.CSTNode) -> bool:
    """Is `node` (re)bound, accumulated into or deleted here rather than read?"""
    parent = _parent(ctx, node)
    if isinstance(parent, (cst.AssignTarget, cst.Del)):
        return True
    return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node


def _use_kind(ctx: ReportContext, node: cst.CSTNode, as_list: bool) -> TotalUse:
    """Follow one read of the total up through the expressions that keep it a number."""
    while True:
        parent = _parent(ctx, node)
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)) and not as_list:
            node = parent
        elif isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression)):
            return TotalUse.NUMERIC
        elif isinstance(parent, cst.Subscript) and parent.value is node and as_list:
            node, as_list = parent, False  # an element of the list
        elif isinstance(parent, cst.Attribute) and parent.value is node:
            call = _parent(ctx, parent)
            reads = isinstance(call, cst.Call) and call.func is parent and not call.args
            return TotalUse.TENSOR if reads and parent.attr.value in TENSOR_READS and not as_list else TotalUse.OTHER
        elif isinstance(parent, cst.Arg) and parent.keyword is None:
            call = _parent(ctx, parent)
            name = _callee_name(call) if isinstance(call, cst.Call) else ""
            if name in REPORTING_CALLS:
                return TotalUse.NUMERIC
            if name in (REDUCING_CALLS if as_list else NUMERIC_CALLS):
                node, as_list = call, False
            else:
                return TotalUse.OTHER
        else:
            return TotalUse.OTHER


def scalar_like(hazard: AccumulationHazard, ctx: ReportContext) -> bool:
    """Is the accumulated value known to hold one element (so `.item()` works)?
    A full `.sum()`/`.mean()`, a loss function, or a call of an `nn.*Loss`
    object, none with `reduction="none"`."""
    value = accumulated_value(hazard)
    if isinstance(value, cst.Name):
        value = hazard.definition
    if not isinstance(value, cst.Call) or _keeps_elements(value):
        return False
    name = _callee_name(value)
    if isinstance(value.func, cst.Attribute) and name in ("sum", "mean") and not value.args:
        return True
    if "loss" in name.lower() or name in LOSS_FUNCTIONS:
        return True
    constructors = [
        v for n, v in _assignments(ctx) if n == name and isinstance(v, cst.Call) and _callee_name(v).endswith("Loss")
    ]
    return bool(constructors) and not any(_keeps_elements(c) for c in constructors)


def _keeps_elements(call: cst.Call) -> bool:
    """`reduction="none"` (or any reduction that is not a plain string)."""
    return any(
        a.keyword is not None
        and a.keyword.value == "reduction"
        and not (isinstance(a.value, cst.SimpleString) and a.value.evaluated_value in ("mean", "sum"))
        for a in call.args
    )


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


_EMPTY = cst.Module(body=())


def _assignments(ctx: ReportContext) -> list[tuple[str, cst.BaseExpression]]:
    """(last name of the target, value) for every single-target assignment:
    `criterion = nn.MSELoss()` and `self.criterion = ...` both give `criterion`."""
    found = []
    for node in ctx.parents:
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                found.append((target.value, node.value))
            elif isinstance(target, cst.Attribute):
                found.append((target.attr.value, node.value))
    return found


def accumulation_fixes(hazard: AccumulationHazard, ctx: ReportContext, item: str, detach: str) -> tuple[Fix, ...]:
    """`.item()` and `.detach()` on the accumulated value, the safe one first
    (see TL003's "Fix safety")."""
    value = accumulated_value(hazard)
    use = total_use(hazard, ctx)
    item_safe = use is TotalUse.NUMERIC and scalar_like(hazard, ctx)
    detach_safe = use is not TotalUse.OTHER
    edit = lambda method: (Edit(ctx.range_of(value), _method(ctx, value, method)),) if value is not None else ()
    fixes = (
        fix_of(FixKind.ITEM, Safety.SAFE if item_safe else Safety.UNSAFE, item, edit("item")),
        fix_of(FixKind.DETACH, Safety.SAFE if detach_safe else Safety.UNSAFE, detach, edit("detach")),
    )
    return fixes if item_safe else fixes[::-1]


# TL005: detach the carried value where each iteration starts.


class Shape(str, Enum):
    TENSOR = "tensor"
    TUPLE = "tuple"


TENSOR_FACTORIES = frozenset(
    "zeros ones randn rand empty full tensor zeros_like ones_like randn_like rand_like empty_like full_like".split()
)
TENSOR_STATE_MODULES = frozenset({"RNN", "GRU", "RNNCell", "GRUCell"})
TUPLE_STATE_MODULES = frozenset({"LSTM", "LSTMCell"})


def carry_detach_edits(hazard: CarriedHazard, ctx: ReportContext) -> tuple[Edit, ...]:
    """`h = h.detach()` as the first statement of each iteration: the loop body,
    or for a step method (`self.h` carried between calls) the method body.
    `tuple(t.detach() for t in h)` for a tuple state, and guarded by `if h is
    not None:` when the value starts as None. The shape is read from what the
    value is bound to (a literal, a tensor factory, an `nn.RNN`/`GRU` or `LSTM`
    constructed in this module) assuming, as the loop itself does when it feeds
    the value back, that it keeps its shape; unknown or conflicting: no edit."""
    loop = hazard.loop
    name = hazard.value
    attribute = name.startswith("self.") and name[5:].isidentifier()
    if not (name.isidentifier() or attribute):
        return ()
    if loop.implicit:
        body = loop.node.body
        if not attribute or not isinstance(body, cst.IndentedBlock):
            return ()
        statements = list(body.body)
        if _is_docstring(statements[0]):
            statements = statements[1:]
    elif isinstance(loop.node, (cst.For, cst.While)) and isinstance(loop.node.body, cst.IndentedBlock):
        statements = list(loop.node.body.body)
    else:
        return ()
    if not statements:
        return ()
    scope = _ancestor(ctx, loop.node, (cst.ClassDef,) if attribute else (cst.FunctionDef,)) or ctx.module
    if _declared_outer(scope, name):
        scope = ctx.module  # `global h`/`nonlocal h`: its other bindings live outside
    bindings = _bindings(scope, name)
    shapes = {_shape(ctx, value, index) for value, index in bindings if not _is_none(value)} - {None}
    if len(shapes) != 1:
        return ()
    shape = shapes.pop()
    detached = f"tuple(t.detach() for t in {name})" if shape is Shape.TUPLE else f"{name}.detach()"
    lines = [f"{name} = {detached}"]
    if any(_is_none(value) for value, _ in bindings):
        lines = [f"if {name} is not None:", f"{ctx.module.default_indent}{lines[0]}"]
    return (_insert_before(ctx, statements[0], lines),)


class _OuterDeclarationFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Global(self, node: cst.Global) -> None:
        self.found = self.found or any(n.name.value == self.name for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.found = self.found or any(n.name.value == self.name for n in node.names)


def _declared_outer(scope: cst.CSTNode, name: str) -> bool:
    finder = _OuterDeclarationFinder(name)
    scope.visit(finder)
    return finder.found


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_none(value: Optional[cst.BaseExpression]) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _bindings(scope: cst.CSTNode, name: str) -> list[tuple[Optional[cst.BaseExpression], Optional[int]]]:
    """(value, index) for every assignment to `name` in `scope`: index is the
    position of `name` in an unpacking target (None: the whole value), value
    None when it is bound some other way (a loop variable, a parameter...)."""
    collector = _AssignmentCollector(name)
    scope.visit(collector)
    return collector.found


class _AssignmentCollector(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found: list[tuple[Optional[cst.BaseExpression], Optional[int]]] = []

    def _spelled(self, node: cst.CSTNode) -> bool:
        return _code(node) == self.name

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._spelled(target.target):
                self.found.append((node.value, None))
            elif isinstance(target.target, (cst.Tuple, cst.List)):
                for i, element in enumerate(target.target.elements):
                    if self._spelled(element.value):
                        self.found.append((node.value, i))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._spelled(node.target):
            self.found.append((node.value, None))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._spelled(node.target):
            self.found.append((node.value, None))

    def visit_For(self, node: cst.For) -> None:
        if self.name in _bound_in(node.target):
            self.found.append((None, None))

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value == self.name:
            self.found.append((None, None))


def _shape(ctx: ReportContext, value: Optional[cst.BaseExpression], index: Optional[int]) -> Optional[Shape]:
    """The shape of a binding, None when it cannot be told."""
    if value is None:
        return None
    if index is not None:
        if isinstance(value, (cst.Tuple, cst.List)) and index < len(value.elements):
            return _shape(ctx, value.elements[index].value, None)
        # `out, h = rnn(x, h)`: the state is the second result of an nn.RNN/GRU/LSTM.
        module = _module_class(ctx, value) if index == 1 else None
        if module in TENSOR_STATE_MODULES and not module.endswith("Cell"):
            return Shape.TENSOR
        if module == "LSTM":
            return Shape.TUPLE
        return None
    if isinstance(value, (cst.Tuple, cst.List)):
        return Shape.TUPLE
    if isinstance(value, cst.Call):
        name = _callee_name(value)
        if isinstance(value.func, cst.Attribute) and name in TENSOR_FACTORIES:
            return Shape.TENSOR
        module = _module_class(ctx, value)
        if module in ("RNNCell", "GRUCell"):
            return Shape.TENSOR
        if module == "LSTMCell":
            return Shape.TUPLE
        return None
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return Shape.TENSOR
    return None


def _module_class(ctx: ReportContext, call: cst.BaseExpression) -> Optional[str]:
    """`rnn(x, h)` with `rnn = nn.RNN(...)` (or `self.rnn = ...`) in this module -> "RNN"."""
    if not isinstance(call, cst.Call):
        return None
    name = _callee_name(call)
    classes = {
        _callee_name(v)
        for n, v in _assignments(ctx)
        if n == name and isinstance(v, cst.Call)
    }
    known = classes & (TENSOR_STATE_MODULES | TUPLE_STATE_MODULES)
    return known.pop() if len(classes) == 1 and known else None
