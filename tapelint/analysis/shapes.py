"""What kind of Python value an expression evaluated to, as the abstract
interpreter saw it: one tensor (and whether it holds one element), a tuple
of tensors, or anything else (a number, a dict or list, `None`, a module, a
library object, or a value nobody knows).

The fixes ask it before they emit `.detach()` or `.item()`: on anything
but a tensor those raise `AttributeError`, and `.item()` on a tensor of
more than one element raises `RuntimeError`. The lattice has no element for
numbers or `None` (they evaluate to no value at all), so an expression is a
tensor only when *every* time it was evaluated it held abstract tensor
nodes and nothing else; a name, only when every value bound to it was
too (`v = loss` on one path and `v = 0.0` on another joins to just `loss`,
but the binding `v = 0.0` itself holds nothing, so `v` is no tensor). A
tensor holds one element when what made its node says so (`node_elements`):
a full reduction, a loss function or an `nn.*Loss` module reducing by mean
or sum, or arithmetic on such tensors alone. `v = loss if c else 0.0` is
told apart where the bindings are read (`analysis.fix_facts`): a tensor or
a number, for which only `float(v)` is valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Optional

import libcst as cst

from tapelint.analysis.imports import dotted_name
from tapelint.analysis.model import OPAQUE, AbstractNode, Carried, ModuleRef, TupleVal
from tapelint.analysis.syntax import plain_string
from tapelint.analysis.torch_api import LOSS_FUNCTIONS, TENSOR_STATE_MODULES, TUPLE_STATE_MODULES
from tapelint.ops import MODULES, TUPLE_LAYERS, TUPLE_RESULTS, Saves

# The expressions whose shape the interpreter records (what a fix may edit,
# other than a name: a name's shape is that of what was bound to it).
SHAPED: frozenset[type] = frozenset(
    (cst.Call, cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation))


class ValueShape(str, Enum):
    SCALAR = "scalar"  # one tensor of one element, on every evaluation: `.item()` works
    TENSOR = "tensor"  # one tensor, on every evaluation: `.detach()` works
    NUMBER = "number"  # a Python number (a literal, `x.item()`): only an arm of `a if c else b`
    SCALAR_OR_NUMBER = "scalar or number"  # `loss if c else 0.0`: only `float(v)` works on both
    TENSOR_OR_NUMBER = "tensor or number"  # neither `.detach()` nor `.item()` works on both
    TUPLE = "tuple"  # a tuple of tensors: `(h, c)`, an `nn.GRU`'s `(output, h)`
    OUTPUT_AND_TUPLE = "output and tuple"  # `(output, (h, c))`: an `nn.LSTM`'s
    OTHER = "other"  # not known to be any of these: never `.detach()`/`.item()` it

    @property
    def tensor(self) -> bool:
        """Is it one tensor on every evaluation (so `.detach()` works)?"""
        return self is ValueShape.TENSOR or self is ValueShape.SCALAR

    def element(self, index: int) -> ValueShape:
        """The shape of `value[index]` (of an unpacking target at `index`)."""
        if self is ValueShape.TUPLE:
            return ValueShape.TENSOR
        if self is ValueShape.OUTPUT_AND_TUPLE and index in (0, 1):
            return ValueShape.TENSOR if index == 0 else ValueShape.TUPLE
        return ValueShape.OTHER


_WITH_NUMBER = {ValueShape.SCALAR: ValueShape.SCALAR_OR_NUMBER, ValueShape.TENSOR: ValueShape.TENSOR_OR_NUMBER,
                ValueShape.SCALAR_OR_NUMBER: ValueShape.SCALAR_OR_NUMBER,
                ValueShape.TENSOR_OR_NUMBER: ValueShape.TENSOR_OR_NUMBER}
_TENSOR_KINDS = frozenset((ValueShape.SCALAR, ValueShape.TENSOR))


def joined(old: Optional[ValueShape], new: ValueShape) -> ValueShape:
    """Two evaluations of one expression (or two arms of a conditional): a
    scalar and a tensor are a tensor; a number beside a (scalar) tensor is
    a (scalar) tensor or a number; anything else that differs is OTHER."""
    if old is None or old is new:
        return new
    pair = {old, new}
    if pair <= _TENSOR_KINDS:
        return ValueShape.TENSOR
    if ValueShape.NUMBER in pair:
        other = (pair - {ValueShape.NUMBER}).pop()
        return _WITH_NUMBER.get(other, ValueShape.OTHER)
    if pair <= {ValueShape.SCALAR, ValueShape.SCALAR_OR_NUMBER}:
        return ValueShape.SCALAR_OR_NUMBER
    if pair <= set(_WITH_NUMBER):
        return ValueShape.TENSOR_OR_NUMBER
    return ValueShape.OTHER


def shape_of(vals: Iterable) -> ValueShape:
    """One evaluation's shape: what every value is (not the unknown
    `OPAQUE`, nor a node standing for something that may be no tensor)."""
    shape: Optional[ValueShape] = None
    for value in vals:
        shape = joined(shape, _value_shape(value))
        if shape is ValueShape.OTHER:
            return shape
    return ValueShape.OTHER if shape is None else shape


def _value_shape(value: object) -> ValueShape:
    if type(value) is TupleVal:
        return _tuple_shape(value)
    node = value.node if type(value) is Carried else value
    if node is OPAQUE or type(node) is not AbstractNode:
        return ValueShape.OTHER
    return node_shape(node)


def _tuple_shape(value: TupleVal) -> ValueShape:
    return _literal_tuple([shape_of(item) for item in value.items], len(value.items))


def _literal_tuple(items: list[ValueShape], length: int) -> ValueShape:
    """A tuple of tensors, or `(tensor, tuple of tensors)` as an LSTM returns it
    (`length`: its elements, starred ones included, which `items` leaves out)."""
    if len(items) != length:
        return ValueShape.OTHER
    if items and all(s.tensor for s in items):
        return ValueShape.TUPLE
    if len(items) == 2 and items[0].tensor and items[1] is ValueShape.TUPLE:
        return ValueShape.OUTPUT_AND_TUPLE
    return ValueShape.OTHER


def node_shape(node: AbstractNode) -> ValueShape:
    """What the tensors of one node are. Not one tensor: a tuple-returning op's
    (`x.chunk(2)`), a call the analysis does not know (an unknown callee, a
    library object: `Saves.UNKNOWN`), a call of a module that is no torch
    layer returning one tensor (a library's model returning an output
    object). A recurrent layer's call is the tuple it returns."""
    if node.op in TUPLE_RESULTS:
        return ValueShape.OTHER
    if node.made_by:
        return _modules_shape(node.made_by)
    if not node.op.endswith("(...)"):
        return ValueShape.SCALAR if node_elements(node) else ValueShape.TENSOR
    if node.saves is Saves.UNKNOWN:
        return ValueShape.OTHER
    layers = all(_torch_layer(p) for p in node.parents if isinstance(p, AbstractNode) and p.leaf and p.op[:1].isupper())
    return ValueShape.TENSOR if layers else ValueShape.OTHER


def _modules_shape(modules: frozenset) -> ValueShape:
    """The result of calling one of these torch layers (`AbstractNode.made_by`)."""
    shape: Optional[ValueShape] = None
    for module in modules:
        shape = joined(shape, _module_shape(module))
    return ValueShape.OTHER if shape is None else shape


def _module_shape(module: ModuleRef) -> ValueShape:
    name = module.class_name
    if module.user_class is not None:
        return ValueShape.OTHER  # a project module without `forward` the analysis ran
    if name in TENSOR_STATE_MODULES or name in TUPLE_STATE_MODULES:
        return ValueShape.TENSOR  # each tensor the layer returns: the tuple is `layer_result`'s
    if name not in MODULES or name in TUPLE_LAYERS:
        return ValueShape.OTHER
    site = module.site
    if name.endswith("Loss") and isinstance(site, cst.Call) and _reduces(site, positional=0):
        return ValueShape.SCALAR
    return ValueShape.TENSOR


def _torch_layer(leaf: AbstractNode) -> bool:
    return leaf.op in MODULES and leaf.op not in TUPLE_LAYERS


# --- how many elements --------------------------------------------------------

# Reductions that, given no dimension, reduce a tensor to one element.
FULL_REDUCTIONS = frozenset(("sum", "mean", "prod", "norm", "nansum", "nanmean", "std", "var", "amax", "amin",
                             "logsumexp", "count_nonzero", "dist", "dot", "vdot", "trace"))
_DIMENSIONS = frozenset(("dim", "axis", "dims"))
# Reductions of a loss: one element (`"none"` keeps one per sample).
_REDUCING = frozenset(("mean", "sum", "batchmean"))
# Arithmetic keeps one element when every tensor it combines has one (a number broadcasts).
_ARITHMETIC = frozenset(("+", "-", "*", "/", "//", "%", "**", "neg"))
_MAX_DEPTH = 8


def reduces_to_one(call: cst.Call, name: str, method: bool) -> bool:
    """Does this torch call return one element whatever its input's size?
    `x.mean()` / `torch.mean(x)` with no dimension, `F.mse_loss(a, b)` with
    no `reduction` or one by mean or sum (the interpreter keeps the answer
    on the call's node, `AbstractNode.reduces_all`). `dist`/`dot`/`vdot`/`trace`
    take a second tensor (`a.dot(b)`, `torch.dot(a, b)`)."""
    pairs = ("dist", "dot", "vdot")
    if name in FULL_REDUCTIONS:
        allowed = (0 if method else 1) + (1 if name in pairs else 0)
        positional = [a for a in call.args if a.keyword is None]
        return (len(positional) == allowed and not any(a.star for a in call.args)
                and not any(a.keyword is not None and a.keyword.value in _DIMENSIONS for a in call.args))
    return not method and name in LOSS_FUNCTIONS and _reduces(call, positional=2)


def _reduces(call: cst.Call, positional: int) -> bool:
    """A loss call (or an `nn.*Loss` construction) that reduces: no argument
    beyond the first `positional`+1 by position (a legacy `size_average`/
    `reduce` may hide there), none of the legacy keywords, and `reduction`
    absent or a literal "mean"/"sum"."""
    if sum(1 for a in call.args if a.keyword is None) > max(positional, 1) or any(a.star for a in call.args):
        return False
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword in ("size_average", "reduce"):
            return False
        if keyword == "reduction":
            value = arg.value
            if not (isinstance(value, cst.SimpleString) and plain_string(value) in _REDUCING):
                return False
    return True


def node_elements(node: AbstractNode, depth: int = 0) -> bool:
    """Does every tensor of this node hold one element? A full reduction (or
    a reducing loss call), a reducing loss module's call, or arithmetic on
    such tensors and numbers alone (a node with no tensor parent, as under
    `no_grad`, says nothing)."""
    if node.reduces_all:
        return True
    if node.made_by:
        return _modules_shape(node.made_by) is ValueShape.SCALAR
    if node.op not in _ARITHMETIC or not node.parents or depth >= _MAX_DEPTH:
        return False
    return all(node_elements(p.node if isinstance(p, Carried) else p, depth + 1) for p in node.parents)


def expression_shape(expr: cst.BaseExpression, seen: Mapping[cst.CSTNode, ValueShape],
                     bound: Mapping[str, ValueShape]) -> ValueShape:
    """The shape of `expr` from what the interpreter recorded: `seen`, per
    expression of a `SHAPED` kind (one never evaluated is not known), and
    `bound`, per name or attribute path, joined over every value bound to it
    by that spelling (a same-spelled variable elsewhere can only make this
    stricter; a parameter, never bound so, is not known). Reading a name
    joins its paths, so its bindings decide: they tell one bound to a number
    apart. `a if c else b` (and `a or b`) needs both arms; an arm that is a
    number makes it "a tensor or a number"."""
    if isinstance(expr, cst.IfExp):
        return _arms(expression_shape(arm, seen, bound) for arm in (expr.body, expr.orelse))
    if isinstance(expr, cst.BooleanOperation):
        return _arms(expression_shape(arm, seen, bound) for arm in (expr.left, expr.right))
    if isinstance(expr, cst.Tuple):
        return _literal_tuple([expression_shape(e.value, seen, bound) for e in expr.elements
                               if not isinstance(e, cst.StarredElement)], len(expr.elements))
    if is_number(expr):
        return ValueShape.NUMBER
    if isinstance(expr, cst.Name):
        return bound.get(expr.value, ValueShape.OTHER)
    own = seen.get(expr, ValueShape.OTHER)
    key = dotted_name(expr) if isinstance(expr, cst.Attribute) else None
    if own is ValueShape.OTHER or key is None:
        return own
    return joined(own, bound.get(key, own))


def _arms(shapes: Iterable[ValueShape]) -> ValueShape:
    shape: Optional[ValueShape] = None
    for arm in shapes:
        shape = joined(shape, arm)
    return ValueShape.OTHER if shape is None else shape


def is_number(expr: cst.BaseExpression) -> bool:
    """A literal number (`0`, `0.0`, `-1.5`), or `x.item()`/`float(x)`/`int(x)`:
    what a Python number is spelled as, whatever it holds."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args:
            return True
        return isinstance(func, cst.Name) and func.value in ("float", "int") and len(expr.args) == 1
    return False
