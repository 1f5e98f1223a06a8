"""Is an expression known to evaluate to one tensor? `.detach()` and
`.item()` are emitted only on such expressions: on a tuple, a list, a dict,
a number or `None` they raise `AttributeError`, so there the fix stays a
suggestion. Judged from the text, conservatively: what may be anything (a
call of a user function or module, a literal, a container) is not."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.torch_api import LOSS_FUNCTIONS, callee_name
from tapelint.fixes.context import SourceContext

# Torch functions and methods that return a tuple (or a named tuple) of tensors.
TUPLE_RESULTS = frozenset((
    "chunk", "split", "tensor_split", "split_with_sizes", "unbind", "hsplit", "vsplit", "dsplit", "topk", "sort",
    "kthvalue", "mode", "median", "max", "min", "aminmax", "unique", "unique_consecutive", "std_mean", "var_mean",
    "frexp", "svd", "qr", "eig", "eigh", "slogdet", "lu", "lstsq", "meshgrid", "broadcast_tensors", "histogram",
    "where", "nonzero", "sample_n", "lu_unpack", "split_by", "atleast_1d",
))
# Methods of a tensor (or a distribution) that return one tensor.
TENSOR_METHODS = frozenset((
    "sample", "rsample", "log_prob", "entropy", "mean", "sum", "prod", "exp", "log", "sigmoid", "tanh", "relu",
    "softmax", "log_softmax", "view", "reshape", "squeeze", "unsqueeze", "flatten", "t", "transpose", "permute",
    "pow", "abs", "sqrt", "clone", "float", "double", "half", "to", "cpu", "cuda", "matmul", "mm", "bmm", "norm",
    "expand", "repeat", "contiguous", "mul", "add", "sub", "div", "neg", "clamp", "gather", "masked_fill",
))
# nn layers whose call returns something other than one tensor.
NON_TENSOR_LAYERS = frozenset(("RNN", "LSTM", "GRU", "MultiheadAttention", "Transformer", "ModuleList", "ModuleDict"))
TORCH_NAMESPACES = ("torch.", "F.", "nn.functional.", "torch.nn.functional.")


def tensor_valued(ctx: SourceContext, expr: cst.CSTNode) -> bool:
    if isinstance(expr, cst.Name):
        # What the name is bound to (by spelling, anywhere: a same-named
        # variable elsewhere can only make this stricter).
        known = ctx.tensor_names.get(expr.value)
        if known is None:
            bound = ctx.assigned.get(expr.value, [])
            known = ctx.tensor_names[expr.value] = bool(bound) and all(
                not isinstance(v, cst.Name) and tensor_valued(ctx, v) for v in bound)
        return known
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return not isinstance(expr, cst.UnaryOperation) or not isinstance(expr.operator, cst.Not)
    if isinstance(expr, (cst.Subscript, cst.Attribute)):
        return True  # an element or a field of what was tracked: a tensor there
    if not isinstance(expr, cst.Call):
        return False
    name = callee_name(expr)
    if name in TUPLE_RESULTS:
        return False
    func = expr.func
    if isinstance(func, cst.Attribute):
        dotted = ctx.code_of(func)
        if dotted.startswith(TORCH_NAMESPACES):
            return True  # `torch.exp(x)`, `F.normalize(x)`
        if not (isinstance(func.value, cst.Name) and func.value.value == "self") and name in TENSOR_METHODS:
            return True  # `x.exp()`, `(a * b).sum()`; `model.features(x)` may return anything
    if name in LOSS_FUNCTIONS or "loss" in name.lower():
        return True
    return _layer_call(ctx, name)


def _layer_call(ctx: SourceContext, name: str) -> bool:
    """A name (or `self.` attribute) bound only to `nn.Layer(...)` constructors
    of layers that return one tensor."""
    constructors = ctx.assigned.get(name, [])
    if not constructors:
        return False
    for value in constructors:
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
            return False
        spelled = ctx.code_of(value.func)
        if not spelled.startswith(("nn.", "torch.nn.")) or callee_name(value) in NON_TENSOR_LAYERS:
            return False
    return True
