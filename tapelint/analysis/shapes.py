"""What kind of Python value an expression evaluated to, as the abstract
interpreter saw it: one tensor, or anything else (a tuple, a number, a dict
or list, `None`, a module, a library object, or a value nobody knows).

The fixes ask it before they emit `.detach()` or `.item()`: on anything
but a tensor those raise `AttributeError`. The lattice has no element for
numbers or `None` (they evaluate to no value at all), so an expression is a
tensor only when *every* time it was evaluated it held abstract tensor
nodes and nothing else; a name, only when every value bound to it was
too (`v = loss` on one path and `v = 0.0` on another joins to just `loss`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Optional

import libcst as cst

from tapelint.analysis.imports import dotted_name
from tapelint.analysis.model import OPAQUE, AbstractNode, Carried
from tapelint.ops import MODULES, TUPLE_LAYERS, TUPLE_RESULTS, Saves

# The expressions whose shape the interpreter records (what a fix may edit,
# other than a name: a name's shape is that of what was bound to it).
SHAPED: frozenset[type] = frozenset(
    (cst.Call, cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation))


class ValueShape(str, Enum):
    TENSOR = "tensor"  # one tensor, on every evaluation
    OTHER = "other"  # not known to be one: never `.detach()`/`.item()` it


def shape_of(vals: Iterable) -> ValueShape:
    """One evaluation's shape: tensor nodes only (not the unknown `OPAQUE`,
    nor a node standing for something that may be no tensor)."""
    found = False
    for value in vals:
        node = value.node if type(value) is Carried else value
        if node is OPAQUE or type(node) is not AbstractNode or not _one_tensor(node):
            return ValueShape.OTHER
        found = True
    return ValueShape.TENSOR if found else ValueShape.OTHER


def _one_tensor(node: AbstractNode) -> bool:
    """Does the node stand for one tensor? Not a tuple-returning op's
    (`x.chunk(2)`), nor a call the analysis does not know (an unknown
    callee, a library object: `Saves.UNKNOWN`), nor a call of a module that
    is no torch layer returning one tensor (an `LSTM`, a library's model
    returning an output object): its parameter leaf names its class."""
    if node.op in TUPLE_RESULTS:
        return False
    if not node.op.endswith("(...)"):
        return True  # a torch op, an operator, an index or field of a tensor
    if node.saves is Saves.UNKNOWN:
        return False
    return all(_torch_layer(p) for p in node.parents if isinstance(p, AbstractNode) and p.leaf and p.op[:1].isupper())


def _torch_layer(leaf: AbstractNode) -> bool:
    return leaf.op in MODULES and leaf.op not in TUPLE_LAYERS


def expression_shape(expr: cst.BaseExpression, seen: Mapping[cst.CSTNode, ValueShape],
                     bound: Mapping[str, ValueShape]) -> ValueShape:
    """The shape of `expr` from what the interpreter recorded: `seen`, per
    expression of a `SHAPED` kind (one never evaluated is not known), and
    `bound`, per name or attribute path, joined over every value bound to it
    by that spelling (a same-spelled variable elsewhere can only make this
    stricter; a parameter, never bound so, is not known). Reading a name
    joins its paths, so its bindings decide: they tell one bound to a number
    apart. `a if c else b` needs both arms."""
    if isinstance(expr, cst.IfExp):
        return _all(expression_shape(arm, seen, bound) for arm in (expr.body, expr.orelse))
    if isinstance(expr, cst.Name):
        return bound.get(expr.value, ValueShape.OTHER)
    own = seen.get(expr, ValueShape.OTHER)
    key = dotted_name(expr) if isinstance(expr, cst.Attribute) else None
    if own is ValueShape.OTHER or key is None:
        return own
    return bound.get(key, own)


def _all(shapes: Iterable[ValueShape]) -> ValueShape:
    return ValueShape.TENSOR if all(s is ValueShape.TENSOR for s in shapes) else ValueShape.OTHER


def joined(old: Optional[ValueShape], new: ValueShape) -> ValueShape:
    """Two evaluations of one expression: a tensor only if both were."""
    return new if old is None or old is new else ValueShape.OTHER
