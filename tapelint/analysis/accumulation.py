"""TL003's part of the mechanism: a loop-carried binding whose new node joins
the previous iteration's node with a fresh tracked one (`total += loss`,
`history.append(loss)`), so every iteration's graph stays reachable.

The walker records every candidate while it runs (`Accumulation`); once the
whole module is analysed, `accumulation_hazards` keeps those that outlive the
iteration, add a fresh tracked value, and sit in a loop over *steps*: its body
runs a backward, or the total is only reported after the loop (an evaluation
loop outside `no_grad`). A total that is backwarded once after the loop is
gradient accumulation done right and is never reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes, hazards
from tapelint.analysis.children import children_of
from tapelint.analysis.findings import AccumulationHazard
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.model import AbstractNode, Carried, ListRef, Loop, Tracked
from tapelint.analysis.store import StoreView
from tapelint.analysis.torch_api import LOSS_OPS, LOSS_WORDS, NUMBER_CALLS, UNGRAPHING_READS, callee_name, only_reports


@dataclass
class Accumulation:
    statement: cst.CSTNode  # the AugAssign / Assign / `.append(...)` call
    target: cst.BaseExpression
    loop: Loop
    loops: tuple[Loop, ...]
    node: Optional[AbstractNode]  # the running total (scalar accumulation)
    lists: list[ListRef]
    added: list = field(default_factory=list)  # graph values added each iteration
    no_grad: bool = False


class Accumulations:
    """Every accumulating statement the interpreter ran in a loop, and where
    each loop sits (to read what follows it)."""

    def __init__(self) -> None:
        self.records: dict[tuple, Accumulation] = {}
        self.loop_sites: dict[Loop, tuple[Sequence[cst.CSTNode], int]] = {}
        self._generators: dict[int, bool] = {}  # id of a FunctionDef -> does it yield (its tree lives on)

    def loop_site(self, loop: Loop, block: Sequence[cst.CSTNode], index: int) -> None:
        self.loop_sites.setdefault(loop, (block, index))

    def note(self, loops: tuple[Loop, ...], context: tuple, statement: cst.CSTNode, target: cst.BaseExpression,
             lists: Sequence[ListRef], added: Sequence, node: Optional[AbstractNode], no_grad: bool) -> None:
        """Record one execution of an accumulating statement inside a loop."""
        if not loops:
            return
        key = (statement, context, loops)
        acc = self.records.get(key)
        if acc is None:
            acc = self.records[key] = Accumulation(statement, target, loops[-1], loops, node, list(lists))
        acc.no_grad = acc.no_grad or no_grad
        for value in added:
            if isinstance(value, (AbstractNode, Carried)) and not any(value is v for v in acc.added):
                acc.added.append(value)
        if node is not None:
            node.accumulator = True
            acc.node = node

    def found(self, store: StoreView) -> dict[AbstractNode, AccumulationHazard]:
        """TL003's findings, keyed by the running total's node (or the first
        appended value, for a list)."""
        found: dict[AbstractNode, AccumulationHazard] = {}
        # A statement that some run (at a real call site) shows feeding a
        # backward after its loop is that loss's computation: its run with
        # unknown callers (a method analysed on its own) says nothing more.
        statements: set[int] = {id(acc.statement) for acc in self.records.values() if _backwarded_after(store, acc)}
        for recorded in self.records.values():
            if id(recorded.statement) in statements or recorded.no_grad:
                continue
            # The innermost loop first; then each loop around it: a meter's
            # `self.sum += val` runs in a loop over the step's statistics, and
            # the step's backward is in the loop around that one.
            for loop in reversed(recorded.loops):
                innermost = loop is recorded.loop
                hazard = self._hazard(store, recorded if innermost else replace(recorded, loop=loop),
                                      check_backward_after=not innermost)
                if hazard is not None:
                    statements.add(id(recorded.statement))
                    found[recorded.node if recorded.node is not None else hazard[0]] = hazard[1]
                    break
        return found

    def _hazard(self, store: StoreView, acc: Accumulation,
                check_backward_after: bool) -> Optional[tuple[AbstractNode, AccumulationHazard]]:
        """The finding of `acc` over its loop (and the value it names), if it
        is one. `check_backward_after`: whether to look for a backward after
        the loop that walks the total (for the statement's innermost loop,
        `found` has looked already: the statement would have been passed over)."""
        if acc.node is not None and _feeds_the_loss(store, acc):
            return None  # carried state that the loss is computed from: TL005's
        fresh = sorted((v for v in acc.added if isinstance(v, AbstractNode) and store.is_tracked(v)
                        and self._made_per_iteration(v, acc) and not _an_unpacked_sibling(v, acc)),
                       key=lambda v: v.made)
        if not fresh or not _outlives(acc):
            return None
        if check_backward_after and _backwarded_after(store, acc):
            return None
        with_backward = _walked_in_loop(store, acc, fresh)
        if not with_backward:
            if not any(self._made_from_a_loss(v, acc) for v in fresh):
                return None
            if not _only_reported_after(self.loop_sites, acc):
                return None
        value = fresh[0]
        return value, AccumulationHazard(
            value=_added_name(acc.statement, value, store),
            definition=value.site,
            fails_under_torch=True,
            loop=acc.loop,
            accumulator=acc.statement,
            accumulator_target=acc.target,
            retention_with_backward=with_backward,
            also=(),
        )

    def _made_per_iteration(self, value: AbstractNode, acc: Accumulation) -> bool:
        return acc.loop in value.loops or self._yielded_per_iteration(value, acc)

    def _yielded_per_iteration(self, value: AbstractNode, acc: Accumulation) -> bool:
        """Was `value` made in a loop, under a generator function that `acc`'s
        loop consumes (`for results in self.evaluate_iter(loader)`, which calls
        `get_outer_loss`)? Each iteration then gets a new one, made on demand, as
        if made in the loop itself."""
        if not value.loops or any(loop in value.loops for loop in acc.loops):
            return False
        return any(type(e) is cst_nodes.FunctionDef and self._is_generator(e) for e in value.context)

    def _is_generator(self, function: cst.FunctionDef) -> bool:
        """Does `function` itself yield (not a def or lambda nested in it)?"""
        known = self._generators.get(id(function))
        if known is None:
            known = self._generators[id(function)] = _yields(function.body)
        return known

    def _made_from_a_loss(self, node: AbstractNode, acc: Accumulation, depth: int = 3) -> bool:
        """Is `node`, or what this iteration computed it from a few operations up
        (a running mean `(loss - mean) / count`), a loss?"""
        if _loss_like(node):
            return True
        return depth > 0 and any(isinstance(p, AbstractNode) and self._made_per_iteration(p, acc)
                                 and self._made_from_a_loss(p, acc, depth - 1) for p in node.parents)


def _yields(body: cst.CSTNode) -> bool:
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) is cst_nodes.Yield:
            return True
        if type(node) not in (cst_nodes.FunctionDef, cst_nodes.Lambda):
            stack.extend(children_of(node))
    return False


def _feeds_the_loss(store: StoreView, acc: Accumulation) -> bool:
    """Does a backward in the loop walk the total as part of what its loss is
    computed from (an EMA, a carried offset), rather than as the loss itself?"""
    for event in store.events.values():
        if acc.loop not in event.loops:
            continue
        roots = {id(r.node if isinstance(r, Carried) else r) for r in event.roots}
        for (node, _), _children in hazards.walk(event.roots):
            if node is acc.node and id(node) not in roots:
                return True
    return False


def _walked_in_loop(store: StoreView, acc: Accumulation, fresh: list) -> bool:
    """Does a backward inside the loop walk the graph of what is accumulated
    (the loss itself, or what it was computed from)? Then the total keeps
    every walked iteration's graph reachable. A backward that only computes
    something else (Jacobian rows with `autograd.grad`) does not count, nor
    does one with `create_graph=True`: that loop is a differentiable
    computation (a MAML inner loop), whose steps the result's graph chains
    together anyway, so keeping each step's loss keeps nothing more alive."""
    wanted: set[int] = set()
    for value in fresh:
        wanted.update(id(node) for (node, _), _children in hazards.walk([value]))
    for event in store.events.values():
        if acc.loop in event.loops and not event.creates_graph and any(
                id(node) in wanted for (node, _), _children in hazards.walk(event.roots)):
            return True
    return False


def _outlives(acc: Accumulation) -> bool:
    """Does the total survive from one iteration to the next?"""
    if acc.lists:
        return any(acc.loop not in lst.loops for lst in acc.lists)
    if acc.node is None:
        return False
    if hazards.feeds_itself(acc.node, acc.loop):
        return True
    key = dotted_name(acc.target) or ""
    return key.startswith("self.")


def _an_unpacked_sibling(value: AbstractNode, acc: Accumulation) -> bool:
    """Is `value` an unknown call's result that the statement adds under
    another name than the one it was first bound to, and no loss's name?
    `loss, sample_size, logging_output = self.criterion(model, sample)` binds
    one node to the three names; `loss.backward()` proves it tracked, but
    what `logging_outputs.append(logging_output)` keeps is the criterion's
    metadata, often `loss.data` (fairseq). `agg_loss, loss = loss_fn(...)`
    then `history.append(loss)` is still reported: a loss by its name."""
    if not value.unpacked or value.tracked is not Tracked.UNKNOWN:
        return False
    spelled = _added_spelling(acc.statement)
    return spelled is not None and spelled != value.name and not any(
        word in spelled.lower() for word in LOSS_WORDS)


def _added_spelling(statement: cst.CSTNode) -> Optional[str]:
    """What `total += x` or `history.append(x)` adds, as written (`x`)."""
    if type(statement) is cst_nodes.AugAssign:
        return _spelled(statement.value)
    if type(statement) is cst_nodes.Call and statement.args:
        return _spelled(statement.args[0].value)
    return None


def _added_name(statement: cst.CSTNode, value: AbstractNode, store: StoreView) -> str:
    """What the message calls the added value: the name the `+=` or the
    `.append(...)` adds it by (`meta_valid_error += evaluation_error`,
    `history.append(loss)`), which the reader sees there,
    rather than the one it was made under in a function called for it
    (`valid_error` inside `fast_adapt`)."""
    name = _added_spelling(statement)
    return name if name is not None else store.display_name(value)


def _spelled(expr: cst.BaseExpression) -> Optional[str]:
    """`loss`, `out.loss`, `losses[name]`, `losses["total"]` as written; None
    for anything longer."""
    if type(expr) is cst_nodes.Subscript and len(expr.slice) == 1 and type(expr.slice[0].slice) is cst_nodes.Index:
        base, index = dotted_name(expr.value), expr.slice[0].slice.value
        if base is not None and type(index) in (cst_nodes.Name, cst_nodes.SimpleString, cst_nodes.Integer):
            return f"{base}[{index.value}]"  # type: ignore[attr-defined]
        return None
    return dotted_name(expr)


def _backwarded_after(store: StoreView, acc: Accumulation) -> bool:
    """Is the total walked by a backward outside the accumulating loop (one
    backward of the summed loss: gradient accumulation, not a hazard)?"""
    accumulated = {id(acc.node)} if acc.node is not None else {id(v) for v in acc.added}
    for event in store.events.values():
        if acc.loop in event.loops:
            continue
        for (node, _), _children in hazards.walk(event.roots):
            if id(node) in accumulated:
                return True
    return False


def _loss_like(node: AbstractNode) -> bool:
    if node.op in LOSS_OPS:
        return True
    text = f"{node.op} {node.name or ''}".lower()
    return any(word in text for word in LOSS_WORDS)


def _only_reported_after(loop_sites: dict[Loop, tuple[Sequence[cst.CSTNode], int]], acc: Accumulation) -> bool:
    """After the loop, is the total only printed, logged, `.item()`-ed or
    averaged? (An evaluation loop's metric, as opposed to a value that the
    program goes on computing with.)"""
    site = loop_sites.get(acc.loop)
    name = _base_name(acc.target)
    if site is None or name is None:
        return False
    block, index = site
    finder = _UseFinder(name)
    for stmt in block[index + 1:]:
        stmt.visit(finder)
    return bool(finder.uses) and all(finder.uses)


def _base_name(target: cst.BaseExpression) -> Optional[str]:
    while isinstance(target, cst.Subscript):
        target = target.value
    return dotted_name(target)


class _UseFinder(cst.CSTVisitor):
    """Classifies every use of `name` as reporting (True) or computing (False)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stack: list[cst.CSTNode] = []
        self.uses: list[bool] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        normalised = self._normalisation(node)
        if normalised is not None:
            normalised.visit(self)  # `total /= n`: the metric averaged; what `n` reads still counts
            return False
        if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) == self.name:
            self.uses.append(self._reporting(node))
            return False
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()

    def _normalisation(self, node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """For `total /= n` or `total = total / n` (an average: still the same
        metric, neither shown nor computed with), the divisor `n`."""
        if (isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.DivideAssign, cst.FloorDivideAssign))
                and dotted_name(node.target) == self.name):
            return node.value
        if (isinstance(node, cst.Assign) and len(node.targets) == 1 and dotted_name(node.targets[0].target) == self.name
                and isinstance(node.value, cst.BinaryOperation)
                and isinstance(node.value.operator, (cst.Divide, cst.FloorDivide))
                and dotted_name(node.value.left) == self.name):
            return node.value.right
        return None

    def _reporting(self, use: cst.CSTNode) -> bool:
        child: cst.CSTNode = use
        for parent in reversed(self.stack):
            if isinstance(parent, cst.Attribute) and parent.attr.value in UNGRAPHING_READS:
                return True
            if isinstance(parent, cst.Call) and (only_reports(parent) or callee_name(parent) in NUMBER_CALLS):
                return True  # shown, or turned into a Python number
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Divide, cst.FloorDivide)):
                if parent.right is child:
                    return False
                # the average (`total / n`) is reported only where it is: printed, or stored and returned?
                child = parent
                continue
            if isinstance(parent, (cst.FormattedString, cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return isinstance(parent, cst.FormattedString)
            child = parent
        return False
