"""Every differentiable operation, declared once: forward, backward, what it saves.

What each op saves follows PyTorch 2.13 as measured in
`shared/reference/torch/torch-saved-ops.json` (`x * 2` saves the scalar,
`x + 1`, sums and views save nothing); `tests/engine/test_saved_ops.py`
re-runs that file's cases on this table. Backward formulas are written with
the functions of this module, so `create_graph=True` records them.
Composite functions (losses, layer norm, ...) are built from these ops and
save whatever their parts save, as PyTorch's do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes, tape
from .tape import Op, Tensor, apply, apply_inplace, named

Number = (int, float, bool, np.number, np.bool_)


# ----------------------------------------------------------------- operand helpers


def const(value: Any, dtype: np.dtype | None = None) -> Tensor:
    """An untracked internal tensor (a wrapped scalar, a mask): it takes no node id."""
    arr = np.asarray(value, dtype=dtype)
    return Tensor(arr, tid=-1)


def _priority(x: Any) -> tuple[np.dtype, int]:
    if isinstance(x, Tensor):
        return x.arr.dtype, 2 if x.arr.ndim else 1
    if isinstance(x, (bool, np.bool_)):
        return np.dtype(np.bool_), 0
    if isinstance(x, (int, np.integer)):
        return np.dtype(np.int64), 0
    return np.dtype(np.float64), 0


def cast(t: Tensor, dt: np.dtype) -> Tensor:
    if t.arr.dtype == dt:
        return t
    if t.requires_grad:
        return apply(TO, t, dtype=dt)
    return const(t.arr.astype(dt)) if t._id == -1 else Tensor(t.arr.astype(dt))


def operands(*xs: Any) -> list[Tensor]:
    """Wrap Python scalars and cast all operands to PyTorch's promoted type."""
    dt = dtypes.promote([_priority(x) for x in xs])
    return [cast(x, dt) if isinstance(x, Tensor) else wrapped_number(x, dt) for x in xs]


def wrapped_number(value: Any, dtype: Any) -> Tensor:
    """A Python number as an operand: PyTorch's wrapped number, which saved_tensors_hooks
    never see (a node saving it keeps the number)."""
    t = const(value, dtype)
    t.wrapped_number = True
    return t


def _float_operands(*xs: Any) -> list[Tensor]:
    ts = operands(*xs)
    if ts[0].arr.dtype.kind != "f":
        ts = [cast(t, dtypes.DEFAULT_FLOAT.np) for t in ts]
    return ts


def norm_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % max(ndim, 1) for d in dims))


def _kept_shape(shape: tuple, dims: tuple[int, ...] | None) -> tuple:
    if dims is None:
        return tuple(1 for _ in shape)
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _np_sum_to(a: np.ndarray, shape: tuple) -> np.ndarray:
    lead = a.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and a.shape[i + lead] != 1)
    return (a.sum(axis=axes, keepdims=True) if axes else a).reshape(shape)


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Undo broadcasting: the gradient of an operand of shape `shape`."""
    return g if g.arr.shape == tuple(shape) else apply(SUM_TO, g, shape=tuple(shape))


def expand(t: Tensor, shape: tuple) -> Tensor:
    shape = tuple(s if s != -1 else t.arr.shape[i - (len(shape) - t.arr.ndim)]
                  for i, s in enumerate(shape))
    return t if t.arr.shape == shape else apply(EXPAND, t, shape=shape)


def _zeros_like(t: Tensor) -> Tensor:
    return const(np.zeros_like(t.arr))


# ----------------------------------------------------------------- elementwise


def _bin(name: str, fwd, bwd, saves=()) -> Op:
    return Op(name, fwd, bwd, saves)


ADD = _bin("Add", np.add, lambda c, g: (sum_to(g, c.shapes[0]) if c.needs[0] else None,
                                        sum_to(g, c.shapes[1]) if c.needs[1] else None))
SUB = _bin("Sub", np.subtract, lambda c, g: (sum_to(g, c.shapes[0]) if c.needs[0] else None,
                                             sum_to(-g, c.shapes[1]) if c.needs[1] else None))
MUL = _bin(
    "Mul", np.multiply,
    lambda c, g: (sum_to(g * c.saved[1], c.shapes[0]) if c.needs[0] else None,
                  sum_to(g * c.saved[0], c.shapes[1]) if c.needs[1] else None),
    lambda needs: ((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))
DIV = _bin(
    "Div", np.true_divide,
    lambda c, g: (sum_to(g / c.saved[1], c.shapes[0]) if c.needs[0] else None,
                  sum_to(-g * c.saved[0] / (c.saved[1] * c.saved[1]), c.shapes[1])
                  if c.needs[1] else None),
    lambda needs: (1, 0) if needs[1] else (1,))
MUL_SCALAR = Op(  # mul.Scalar, as PyTorch's C++ composites call it: nothing saved
    "Mul", lambda a, factor: (a * factor).astype(a.dtype), lambda c, g: (g * c.attrs["factor"],), (),
    node="MulBackward1")
POW = Op(
    "Pow", np.power,
    lambda c, g: (sum_to(g * c.saved[1] * c.saved[0] ** (c.saved[1] - 1), c.shapes[0])
                  if c.needs[0] else None,
                  sum_to(g * c.saved["out"] * log(c.saved[0]), c.shapes[1]) if c.needs[1] else None),
    (0, 1, "out"), node="PowBackward1")
POW_BASE = Op(  # a Python number to a tensor power: PowBackward2 saves the exponent and the result
    "Pow", lambda e, base: np.power(base, e).astype(e.dtype),
    lambda c, g: (g * c.saved["out"] * math.log(c.attrs["base"]),),
    (0, "out"), node="PowBackward2")
POW_SCALAR = Op(
    "Pow", lambda a, exponent: np.power(a, exponent),
    lambda c, g: (g * c.attrs["exponent"] * c.saved[0] ** (c.attrs["exponent"] - 1),),
    (0,))
MAXIMUM = _bin(
    "Maximum", np.maximum,
    lambda c, g: (sum_to(g * _tie_mask(c.saved[0], c.saved[1]), c.shapes[0]) if c.needs[0] else None,
                  sum_to(g * _tie_mask(c.saved[1], c.saved[0]), c.shapes[1]) if c.needs[1] else None),
    (0, 1))
MINIMUM = _bin(
    "Minimum", np.minimum,
    lambda c, g: (sum_to(g * _tie_mask(c.saved[1], c.saved[0]), c.shapes[0]) if c.needs[0] else None,
                  sum_to(g * _tie_mask(c.saved[0], c.saved[1]), c.shapes[1]) if c.needs[1] else None),
    (0, 1))
WHERE = Op(
    "Where", lambda cond, a, b: np.where(cond, a, b),
    lambda c, g: (None,
                  sum_to(where(c.saved[0], g, 0.0), c.shapes[1]) if c.needs[1] else None,
                  sum_to(where(c.saved[0], 0.0, g), c.shapes[2]) if c.needs[2] else None),
    (0,))


def _tie_mask(a: Tensor, b: Tensor) -> Tensor:
    """1 where `a` wins, 0.5 on ties: how PyTorch splits maximum's gradient."""
    x, y = a.arr, b.arr
    return const(np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0)).astype(np.result_type(x, y)))


def _unary(name: str, fwd, bwd, saves=(), node: str = "") -> Op:
    return Op(name, fwd, lambda c, g: (bwd(c, g),), saves, node=node)


def _rounded(fn):
    """Evaluate in float64 and round once: numpy's float32 kernels can be an ulp off
    PyTorch's (exp(1) gives 2.718282, PyTorch 2.7182817)."""
    def forward(a: np.ndarray) -> np.ndarray:
        return fn(a.astype(np.float64)).astype(a.dtype) if a.dtype.itemsize < 8 else fn(a)
    return forward


def _erf(a: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[a.dtype])(a) if a.size else a.copy()


NEG = _unary("Neg", np.negative, lambda c, g: -g)
ABS = _unary("Abs", np.abs, lambda c, g: g * sign(c.saved[0]), (0,))
SIGN = _unary("Sign", np.sign, lambda c, g: g * 0.0)
EXP = _unary("Exp", _rounded(np.exp), lambda c, g: g * c.saved["out"], ("out",))
LOG = _unary("Log", _rounded(np.log), lambda c, g: g / c.saved[0], (0,))
LOG1P = _unary("Log1P", _rounded(np.log1p), lambda c, g: g / (c.saved[0] + 1), (0,))
SQRT = _unary("Sqrt", np.sqrt, lambda c, g: g / (c.saved["out"] * 2), ("out",))
RSQRT = _unary("Rsqrt", _rounded(lambda a: 1 / np.sqrt(a)),
               lambda c, g: g * -0.5 * c.saved["out"] ** 3, ("out",))
RECIPROCAL = _unary("Reciprocal", np.reciprocal,
                    lambda c, g: -g * c.saved["out"] * c.saved["out"], ("out",))
SIN = _unary("Sin", _rounded(np.sin), lambda c, g: g * cos(c.saved[0]), (0,))
COS = _unary("Cos", _rounded(np.cos), lambda c, g: -g * sin(c.saved[0]), (0,))
TANH = _unary("Tanh", _rounded(np.tanh), lambda c, g: g * (1 - c.saved["out"] * c.saved["out"]), ("out",))
SIGMOID = _unary("Sigmoid", _rounded(lambda a: 1 / (1 + np.exp(-a))),
                 lambda c, g: g * c.saved["out"] * (1 - c.saved["out"]), ("out",))
RELU = _unary("Relu", lambda a: np.maximum(a, 0).astype(a.dtype),
              lambda c, g: g * _positive(c.saved["out"]), ("out",))
LEAKY_RELU = _unary(
    "LeakyRelu", lambda a, slope: np.where(a > 0, a, a * a.dtype.type(slope)),
    lambda c, g: g * const(np.where(c.saved[0].arr > 0, 1, c.attrs["slope"]).astype(g.arr.dtype)),
    (0,))
LOG_SIGMOID = _unary(
    "LogSigmoid", _rounded(lambda a: np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))),
    lambda c, g: g * sigmoid(-c.saved[0]), (0,))
ERF = _unary("Erf", _erf,
             lambda c, g: g * (2 / math.sqrt(math.pi)) * exp(-(c.saved[0] * c.saved[0])), (0,))
CLAMP = _unary(
    "Clamp", lambda a, lo, hi: np.clip(a, lo, hi).astype(a.dtype),
    lambda c, g: g * _in_range(c.saved[0], c.attrs["lo"], c.attrs["hi"]), (0,), node="ClampBackward1")


def _positive(t: Tensor) -> Tensor:
    return const((t.arr > 0).astype(t.arr.dtype))


def _in_range(t: Tensor, lo: float | None, hi: float | None) -> Tensor:
    x = t.arr
    mask = np.ones(x.shape, dtype=bool)
    if lo is not None:
        mask &= x >= lo
    if hi is not None:
        mask &= x <= hi
    return const(mask.astype(x.dtype))


# ------------------------------------------------------------------ reductions


def _sum_fwd(a: np.ndarray, dims: tuple | None, keepdim: bool) -> np.ndarray:
    out = np.sum(a, axis=dims, keepdims=keepdim)
    return np.asarray(out, dtype=np.int64 if a.dtype.kind in "biu" else a.dtype)


def _grow(g: Tensor, shape: tuple, dims: tuple | None, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to the input's shape."""
    if not keepdim:
        g = reshape(g, _kept_shape(shape, dims))
    return expand(g, shape)


def _count(shape: tuple, dims: tuple | None) -> int:
    return int(np.prod([shape[d] for d in dims])) if dims is not None else int(np.prod(shape))


SUM = Op("Sum", _sum_fwd,
         lambda c, g: (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"]),))
MEAN = Op("Mean", lambda a, dims, keepdim: np.asarray(np.mean(a, axis=dims, keepdims=keepdim),
                                                      dtype=a.dtype),
          lambda c, g: (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"])
                        / _count(c.shapes[0], c.attrs["dims"]),))
def _var_forward(a: np.ndarray, dims: Any, keepdim: bool, correction: int) -> np.ndarray:
    return np.asarray(np.var(a, axis=dims, keepdims=keepdim, ddof=correction), dtype=a.dtype)


def _var_backward(c: Any, g: Tensor) -> Tensor:
    """The input's gradient given `g`, the gradient of its variance."""
    return (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"])
            * (c.saved[0] - mean(c.saved[0], c.attrs["dims"], keepdim=True))
            * (2.0 / (_count(c.shapes[0], c.attrs["dims"]) - c.attrs["correction"])))


VAR = Op("Var", _var_forward, lambda c, g: (_var_backward(c, g),), (0,))
STD = Op(  # its own op, as in PyTorch: a zero deviation gets a zero gradient, not 0/0
    "Std",
    lambda a, **attrs: np.sqrt(_var_forward(a, **attrs)),
    lambda c, g: (_var_backward(c, g / (where(c.saved["out"].detach() == 0, 1.0, c.saved["out"]) * 2)),),
    (0, "out"))
NORM = Op(
    "LinalgVectorNorm",
    lambda a, dims, keepdim: np.asarray(np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim)),
                                        dtype=a.dtype),
    lambda c, g: (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"]) * c.saved[0]
                  / _grow(where(c.saved["out"].detach() == 0, 1.0, c.saved["out"]), c.shapes[0],
                          c.attrs["dims"], c.attrs["keepdim"]),),
    (0, "out"))
EXTREME = Op(  # full max()/min(): gradient split evenly among ties, as PyTorch does
    "Max", lambda a, fn: np.asarray(fn(a), dtype=a.dtype),
    lambda c, g: (g * _even_mask(c.saved[0], c.saved["out"]),),
    (0, "out"), node="MaxBackward1")
LOGSUMEXP = Op(
    "Logsumexp",
    lambda a, dims, keepdim: _logsumexp(a, dims, keepdim),
    lambda c, g: (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"])
                  * exp(c.saved[0] - _grow(c.saved["out"], c.shapes[0], c.attrs["dims"],
                                           c.attrs["keepdim"])),),
    (0, "out"))
SOFTMAX = Op(
    "Softmax", lambda a, dim: _softmax(a, dim),
    lambda c, g: (c.saved["out"] * (g - sum(g * c.saved["out"], c.attrs["dim"], keepdim=True)),),
    ("out",))
LOG_SOFTMAX = Op(
    "LogSoftmax", lambda a, dim: (a - _logsumexp(a, (dim % a.ndim,), True)).astype(a.dtype),
    lambda c, g: (g - exp(c.saved["out"]) * sum(g, c.attrs["dim"], keepdim=True),),
    ("out",))
AMAX = Op(  # amax/amin: gradient split evenly among ties along the reduced dims
    "Amax", lambda a, dims, keepdim, fn: np.asarray(fn(a, axis=dims, keepdims=keepdim), dtype=a.dtype),
    lambda c, g: (_grow(g, c.shapes[0], c.attrs["dims"], c.attrs["keepdim"])
                  * _tie_share(c.saved[0], c.saved["out"], c.attrs["dims"], c.attrs["keepdim"]),),
    (0, "out"))
MIN_EXTREME = Op("Min", EXTREME.forward, EXTREME.backward, EXTREME.saves, node="MinBackward1")
ALONG = Op(  # max(dim)/min(dim)/sort/topk values: elements picked along a dim by indices
    "Max", lambda a, dim, idx, keepdim: (_take(a, dim, idx, keepdim), {"indices": idx}),
    lambda c, g: (apply(SCATTER_ADD, g if c.attrs["keepdim"] else unsqueeze(g, c.attrs["dim"]),
                        shape=c.shapes[0], dim=c.attrs["dim"], idx=c.attrs["idx"]),),
    ("indices",))


def _take(a: np.ndarray, dim: int, idx: np.ndarray, keepdim: bool) -> np.ndarray:
    out = np.take_along_axis(a, idx, axis=dim)
    return out if keepdim else np.squeeze(out, axis=dim)


def along(a: Tensor, dim: int, idx: np.ndarray, keepdim: bool, node: str) -> Tensor:
    """`a`'s elements at `idx` along `dim` (indices shaped as with keepdim), one node."""
    return apply(named(ALONG, node), a, dim=dim % a.arr.ndim, idx=idx.astype(np.int64), keepdim=keepdim)
CUMSUM = Op("Cumsum", lambda a, dim: np.cumsum(a, axis=dim, dtype=a.dtype),
            lambda c, g: (flip(cumsum(flip(g, (c.attrs["dim"],)), c.attrs["dim"]),
                               (c.attrs["dim"],)),))


def _even_mask(a: Tensor, out: Tensor) -> Tensor:
    m = (a.arr == out.arr)
    return const((m / m.sum()).astype(a.arr.dtype))


def _tie_share(a: Tensor, out: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    o = out.arr if keepdim else np.expand_dims(out.arr, dims)
    m = a.arr == o
    return const((m / m.sum(axis=dims, keepdims=True)).astype(a.arr.dtype))


def _logsumexp(a: np.ndarray, dims: tuple | None, keepdim: bool) -> np.ndarray:
    m = np.max(a, axis=dims, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(a - m), axis=dims, keepdims=True)) + m
    return np.asarray(out if keepdim else np.squeeze(out, axis=dims), dtype=a.dtype)


def _softmax(a: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(a - np.max(a, axis=dim, keepdims=True))
    return (e / np.sum(e, axis=dim, keepdims=True)).astype(a.dtype)


# -------------------------------------------------------------------- products


def _lift(shape: tuple, first: bool) -> tuple:
    if len(shape) != 1:
        return shape
    return (1,) + shape if first else shape + (1,)


def _matmul_bwd(c, g: Tensor) -> tuple:
    sa, sb = c.shapes
    la, lb = _lift(sa, True), _lift(sb, False)
    g2 = g
    if len(sa) == 1:
        g2 = unsqueeze(g2, -2 if len(sb) != 1 else 0)
    if len(sb) == 1:
        g2 = unsqueeze(g2, -1)
    ga = gb = None
    if c.needs[0]:
        b = reshape(c.saved[1], lb)
        ga = reshape(sum_to(matmul(g2, transpose(b, -1, -2)), la), sa)
    if c.needs[1]:
        a = reshape(c.saved[0], la)
        gb = reshape(sum_to(matmul(transpose(a, -1, -2), g2), lb), sb)
    return ga, gb


MATMUL = Op("Mm", np.matmul, _matmul_bwd,
            lambda needs: ((1,) if needs[0] else ()) + ((0,) if needs[1] else ()))


def _linear_fwd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    out = np.matmul(x, w.T)
    return out + b if b is not None else out


def _linear_bwd(c, g: Tensor) -> tuple:
    gx = gw = gb = None
    if c.needs[0]:
        gx = matmul(g, c.saved[1])
    if c.needs[1]:
        g2 = reshape(g, (-1, c.shapes[1][0]))
        gw = matmul(transpose(g2, 0, 1), reshape(c.saved[0], (-1, c.shapes[1][1])))
    if len(c.needs) > 2 and c.needs[2]:
        gb = sum_to(g, c.shapes[2])
    return (gx, gw, gb)[:len(c.needs)]


LINEAR = Op("Addmm", _linear_fwd, _linear_bwd,
            lambda needs: ((1,) if needs[0] else ()) + ((0,) if needs[1] else ()),
            shown_transposed=(1,))  # PyTorch saves weight.t(), and its errors show that view
ADDMM = Op(  # bias + mat1 @ mat2: PyTorch's linear on a 2-D input, weight.t() as mat2
    "Addmm", lambda b, m1, m2: np.matmul(m1, m2) + b,
    lambda c, g: (sum_to(g, c.shapes[0]) if c.needs[0] else None,
                  matmul(g, transpose(c.saved[2], 0, 1)) if c.needs[1] else None,
                  matmul(transpose(c.saved[1], 0, 1), g) if c.needs[2] else None),
    lambda needs: ((1,) if needs[2] else ()) + ((2,) if needs[1] else ()))


# ---------------------------------------------------------------- views & shape

RESHAPE = Op("View", lambda a, shape: np.reshape(a, shape),
             lambda c, g: (reshape(g, c.shapes[0]),))
TRANSPOSE = Op("Transpose", lambda a, d0, d1: np.swapaxes(a, d0, d1),
               lambda c, g: (transpose(g, c.attrs["d0"], c.attrs["d1"]),))
PERMUTE = Op("Permute", lambda a, dims: np.transpose(a, dims),
             lambda c, g: (permute(g, tuple(np.argsort(c.attrs["dims"]))),))
EXPAND = Op("Expand", lambda a, shape: np.broadcast_to(a, shape),
            lambda c, g: (sum_to(g, c.shapes[0]),))
SUM_TO = Op("Sum", _np_sum_to, lambda c, g: (expand(g, c.shapes[0]),))
REPEAT = Op("Repeat", lambda a, reps: np.tile(a, reps), lambda c, g: (_repeat_bwd(c, g),))
FLIP = Op("Flip", lambda a, dims: np.flip(a, dims).copy(), lambda c, g: (flip(g, c.attrs["dims"]),))
ROLL = Op("Roll", lambda a, shifts, dims: np.roll(a, shifts, dims),
          lambda c, g: (roll(g, tuple(-s for s in c.attrs["shifts"]), c.attrs["dims"]),))
PAD = Op("ConstantPadNd", lambda a, widths, value: np.pad(a, widths, constant_values=value),
         lambda c, g: (index(g, tuple(slice(lo, lo + s) for (lo, _), s in
                                      zip(c.attrs["widths"], c.shapes[0]))),))
CAT = Op("Cat", lambda *arrays, dim: np.concatenate(arrays, axis=dim), lambda c, g: _cat_bwd(c, g))
STACK = Op("Stack", lambda *arrays, dim: np.stack(arrays, axis=dim),
            lambda c, g: tuple(index(g, (slice(None),) * c.attrs["dim"] + (i,)) if need else None
                               for i, need in enumerate(c.needs)))
CLONE = Op("Clone", lambda a: a.copy(), lambda c, g: (g,))
TO = Op("ToCopy", lambda a, dtype: a.astype(dtype), lambda c, g: (cast(g, c.dtypes[0]),))


def _repeat_bwd(c, g: Tensor) -> Tensor:
    shape, reps = c.shapes[0], c.attrs["reps"]
    lead = len(reps) - len(shape)
    full = (1,) * lead + tuple(shape)
    split = tuple(x for r, s in zip(reps, full) for x in (r, s))
    summed = sum(reshape(g, split), tuple(range(0, 2 * len(full), 2)))
    return reshape(summed, shape)


def _cat_bwd(c, g: Tensor) -> tuple:
    dim = c.attrs["dim"]
    out, start = [], 0
    for shape, need in zip(c.shapes, c.needs):
        stop = start + shape[dim]
        key = (slice(None),) * dim + (slice(start, stop),)
        out.append(index(g, key) if need else None)
        start = stop
    return tuple(out)


# -------------------------------------------------------------------- indexing


def _scatter(g: np.ndarray, shape: tuple, key: Any, dtype: np.dtype) -> np.ndarray:
    z = np.zeros(shape, dtype=dtype)
    np.add.at(z, key, g)
    return z


INDEX = Op("Index", lambda a, key: a[key], lambda c, g: (_index_bwd(c, g),))
INDEX_SAVING = Op("Index", lambda a, key: (a[key], {"indices": _key_arrays(key)}),
                  lambda c, g: (_index_bwd(c, g),), ("indices",))
INDEX_BACKWARD = Op("IndexPut", lambda g, shape, key: _scatter(g, shape, key, g.dtype),
                    lambda c, g: (index(g, c.attrs["key"]),))
INDEX_PUT = Op(  # t[key] = value, in place: (old t, value) -> new t
    "CopySlices", lambda a, v, key: _put(a, v, key),
    lambda c, g: (index_put(g, c.attrs["key"], 0.0) if c.needs[0] else None,
                  sum_to(index(g, c.attrs["key"]), c.shapes[1]) if c.needs[1] else None))
GATHER = Op(
    "Gather", lambda a, dim, idx: (np.take_along_axis(a, idx, axis=dim), {"index": idx}),
    lambda c, g: (apply(SCATTER_ADD, g, shape=c.shapes[0], dim=c.attrs["dim"], idx=c.attrs["idx"]),),
    ("index", 0))
EMBEDDING = Op(  # weight[rows]; the padding row gets no gradient
    "Embedding", lambda w, rows, padding_idx: (w[rows], {"indices": rows}),
    lambda c, g: (_embedding_bwd(c, g),), ("indices",))
SCATTER_ADD: Op = Op("ScatterAdd", lambda g, shape, dim, idx: _scatter_along(g, shape, dim, idx),
                 lambda c, g: (gather(g, c.attrs["dim"], c.attrs["idx"]),))


def _key_arrays(key: Any) -> np.ndarray:
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [np.asarray(p) for p in parts if isinstance(p, (np.ndarray, list))]
    return np.concatenate([a.ravel().astype(np.int64) for a in arrays]) if arrays else np.zeros(0)


def _embedding_bwd(c, g: Tensor) -> Tensor:
    grad = apply(INDEX_BACKWARD, g, shape=c.shapes[0], key=c.attrs["rows"])
    pad = c.attrs["padding_idx"]
    if pad is None:
        return grad
    keep = np.ones((c.shapes[0][0], 1), g.arr.dtype)
    keep[pad] = 0
    return grad * const(keep)


def _index_bwd(c, g: Tensor) -> Tensor:
    return apply(INDEX_BACKWARD, g, shape=c.shapes[0], key=c.attrs["key"])


def _put(a: np.ndarray, v: np.ndarray, key: Any) -> np.ndarray:
    out = a.copy()
    out[key] = v
    return out


def _scatter_along(g: np.ndarray, shape: tuple, dim: int, idx: np.ndarray) -> np.ndarray:
    z = np.zeros(shape, dtype=g.dtype)
    grids: list[np.ndarray] = list(np.indices(idx.shape, sparse=True))
    grids[dim] = idx
    np.add.at(z, tuple(grids), g)
    return z


def is_basic_key(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts)


# ------------------------------------------------------------ functional layer


def add(a: Any, b: Any, alpha: float = 1) -> Tensor:
    if alpha != 1:
        b = mul(b, alpha)
    return apply(ADD, *operands(a, b))


def sub(a: Any, b: Any, alpha: float = 1) -> Tensor:
    if alpha != 1:
        b = mul(b, alpha)
    reflected = not isinstance(a, Tensor)  # `2 - x` is PyTorch's rsub
    return apply(named(SUB, "RsubBackward1") if reflected else SUB, *operands(a, b))


def mul(a: Any, b: Any) -> Tensor:
    return apply(MUL, *operands(a, b))


def div(a: Any, b: Any, rounding_mode: str | None = None) -> Tensor:
    if rounding_mode is not None:
        x, y = operands(a, b)
        fn = np.floor_divide if rounding_mode == "floor" else (lambda p, q: np.trunc(p / q))
        return Tensor(np.asarray(fn(x.arr, y.arr)).astype(x.arr.dtype))
    if not isinstance(a, Tensor) and isinstance(b, Tensor) and b.requires_grad and tape.STATE.semantics == "torch":
        return mul(reciprocal(b), a)  # PyTorch's `2 / x`: Mul of a Reciprocal
    return apply(DIV, *_float_operands(a, b))


def pow(a: Any, b: Any) -> Tensor:  # noqa: A001 - PyTorch's name
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        dt = dtypes.promote([_priority(a), _priority(b)])
        return apply(POW_SCALAR, cast(a, dt), exponent=b)
    if not isinstance(a, Tensor):  # a scalar base: PowBackward2 saves the exponent and the result
        _, e = operands(a, b)
        return apply(POW_BASE, e, base=float(a))
    return apply(POW, *operands(a, b))


def neg(a: Tensor) -> Tensor:
    return apply(NEG, a)


def maximum(a: Any, b: Any) -> Tensor:
    return apply(MAXIMUM, *operands(a, b))


def minimum(a: Any, b: Any) -> Tensor:
    return apply(MINIMUM, *operands(a, b))


def scale(a: Tensor, factor: float) -> Tensor:
    """`a * factor` as a C++ composite computes it (`MulBackward1`, saving nothing), not as
    Python's `a * 2` (`MulBackward0`, saving the wrapped scalar)."""
    return apply(MUL_SCALAR, _float(a), factor=float(factor))


def where(cond: Any, a: Any, b: Any, node: str = "") -> Tensor:
    c = cond if isinstance(cond, Tensor) else const(cond)
    x, y = operands(a, b)
    return apply(named(WHERE, node) if node else WHERE, const(c.arr.astype(bool)), x, y)


def _float(a: Tensor) -> Tensor:
    return a if a.arr.dtype.kind == "f" else cast(a, dtypes.DEFAULT_FLOAT.np)


def abs(a: Tensor) -> Tensor:  # noqa: A001
    return apply(ABS, a)


def sign(a: Tensor) -> Tensor:
    return apply(SIGN, a)


def exp(a: Tensor) -> Tensor:
    return apply(EXP, _float(a))


def log(a: Tensor) -> Tensor:
    return apply(LOG, _float(a))


def log1p(a: Tensor) -> Tensor:
    return apply(LOG1P, _float(a))


def sqrt(a: Tensor) -> Tensor:
    return apply(SQRT, _float(a))


def rsqrt(a: Tensor) -> Tensor:
    return apply(RSQRT, _float(a))


def reciprocal(a: Tensor) -> Tensor:
    return apply(RECIPROCAL, _float(a))


def sin(a: Tensor) -> Tensor:
    return apply(SIN, _float(a))


def cos(a: Tensor) -> Tensor:
    return apply(COS, _float(a))


def tanh(a: Tensor) -> Tensor:
    return apply(TANH, _float(a))


def sigmoid(a: Tensor) -> Tensor:
    return apply(SIGMOID, _float(a))


def relu(a: Tensor) -> Tensor:
    return apply(RELU, a)


def leaky_relu(a: Tensor, negative_slope: float = 0.01) -> Tensor:
    return apply(LEAKY_RELU, a, slope=negative_slope)


def logsigmoid(a: Tensor) -> Tensor:
    return apply(LOG_SIGMOID, _float(a))


def erf(a: Tensor) -> Tensor:
    return apply(ERF, _float(a))


def clamp(a: Tensor, min: Any = None, max: Any = None, node: str = "") -> Tensor:  # noqa: A002
    """`clamp`; `node` names the spelling's node (`clamp_min` is `ClampMinBackward0`)."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = a
        if min is not None:
            out = apply(named(MAXIMUM, "ClampBackward0"), *operands(out, min))
        if max is not None:
            out = apply(named(MINIMUM, "ClampBackward0"), *operands(out, max))
        return out
    return apply(named(CLAMP, node) if node else CLAMP, a, lo=min, hi=max)


def sum(a: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:  # noqa: A001
    if dtype is not None:
        a = cast(a, dtypes.as_np(dtype))
    dims = norm_dims(dim, a.arr.ndim)
    return apply(SUM if dims is None else named(SUM, "SumBackward1"), a, dims=dims, keepdim=keepdim)


def mean(a: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    if dtype is not None:
        a = cast(a, dtypes.as_np(dtype))
    if a.arr.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {dtypes.from_np(a.arr.dtype).name.capitalize()}")
    dims = norm_dims(dim, a.arr.ndim)
    return apply(MEAN if dims is None else named(MEAN, "MeanBackward1"), a, dims=dims, keepdim=keepdim)


def var(a: Tensor, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: int | None = None) -> Tensor:
    corr = correction if correction is not None else (1 if unbiased else 0)
    return apply(VAR, a, dims=norm_dims(dim, a.arr.ndim), keepdim=keepdim, correction=corr)


def std(a: Tensor, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: int | None = None) -> Tensor:
    corr = correction if correction is not None else (1 if unbiased else 0)
    return apply(STD, a, dims=norm_dims(dim, a.arr.ndim), keepdim=keepdim, correction=corr)


def norm(a: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    if p not in (2, "fro", 2.0):
        from .errors import NotSupportedByEngine

        raise NotSupportedByEngine(f"torch.norm with p={p!r}")
    return apply(NORM, a, dims=norm_dims(dim, a.arr.ndim), keepdim=keepdim)


def logsumexp(a: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    return apply(LOGSUMEXP, a, dims=norm_dims(dim, a.arr.ndim), keepdim=keepdim)


def softmax(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    a = cast(a, dtypes.as_np(dtype)) if dtype is not None else _float(a)
    return apply(SOFTMAX, a, dim=dim % max(a.arr.ndim, 1))


def log_softmax(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    a = cast(a, dtypes.as_np(dtype)) if dtype is not None else _float(a)
    return apply(LOG_SOFTMAX, a, dim=dim % max(a.arr.ndim, 1))


def cumsum(a: Tensor, dim: int) -> Tensor:
    return apply(CUMSUM, a, dim=dim % max(a.arr.ndim, 1))


def extreme(a: Tensor, largest: bool) -> Tensor:
    return apply(EXTREME if largest else MIN_EXTREME, a, fn=np.max if largest else np.min)


def amax(a: Tensor, dim: Any, keepdim: bool, largest: bool) -> Tensor:
    return apply(AMAX, a, dims=norm_dims(dim, a.arr.ndim), keepdim=keepdim,
                 fn=np.max if largest else np.min)


def arg_extreme(a: Tensor, dim: int | None, keepdim: bool, largest: bool) -> Tensor:
    fn = np.argmax if largest else np.argmin
    if dim is None:
        return Tensor(np.asarray(fn(a.arr), dtype=np.int64))
    idx = fn(a.arr, axis=dim)
    return Tensor(np.expand_dims(idx, dim) if keepdim else idx)


def gather(a: Tensor, dim: int, idx: Any) -> Tensor:
    arr = idx.arr if isinstance(idx, Tensor) else np.asarray(idx)
    return apply(GATHER, a, dim=dim % a.arr.ndim, idx=arr.astype(np.int64))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    x, y = operands(a, b)
    if x.arr.ndim > 2 and y.arr.ndim == 2 and tape.STATE.semantics == "torch":  # PyTorch folds the batch
        flat = matmul(reshape(x, (-1, x.arr.shape[-1])), y)
        return reshape(flat, x.arr.shape[:-1] + y.arr.shape[-1:], "UnsafeViewBackward0")
    if x.arr.ndim > 2 and y.arr.ndim > 2 and tape.STATE.semantics == "torch":
        return _batched_matmul(x, y)
    return apply(named(MATMUL, _matmul_node(x.arr.ndim, y.arr.ndim)), x, y)


def _batched_matmul(x: Tensor, y: Tensor) -> Tensor:
    """PyTorch's batched product: both operands expanded to the broadcast batch (an Expand
    node even when nothing broadcasts), viewed as 3-D, one Bmm, the result viewed back."""
    batch = np.broadcast_shapes(x.arr.shape[:-2], y.arr.shape[:-2])
    out = bmm(_folded(x, batch), _folded(y, batch))
    return reshape(out, batch + out.arr.shape[-2:], "UnsafeViewBackward0")


def _folded(t: Tensor, batch: tuple) -> Tensor:
    """`t` expanded to `batch` and reshaped to 3-D: a view when the expanded batch dims
    merge (their strides line up), else a copy, as PyTorch's reshape decides."""
    shape = batch + t.arr.shape[-2:]
    expanded = apply(EXPAND, t, shape=shape)
    lead = (1,) * (len(shape) - t.arr.ndim) + t.arr.shape
    contiguous = [int(np.prod(lead[i + 1:])) for i in range(len(lead))]
    strides = [0 if lead[i] == 1 and shape[i] != 1 else contiguous[i] for i in range(len(shape))]
    kept = [i for i in range(len(batch)) if shape[i] != 1]
    mergeable = all(strides[a] == strides[b] * shape[b] for a, b in zip(kept, kept[1:]))
    folded = (int(np.prod(batch)),) + t.arr.shape[-2:]
    if mergeable:
        return reshape(expanded, folded)
    return reshape(clone(expanded), folded, "UnsafeViewBackward0")


def _baddbmm_bwd(c, g: Tensor) -> tuple:
    """(mask, batch1, batch2): the added term sums back to its shape; the product as bmm."""
    saved = {i - 1: t for i, t in c.saved.items()}  # batch1, batch2 at bmm's positions
    mm = _matmul_bwd(tape.Ctx(saved, c.attrs, c.shapes[1:], c.dtypes[1:], c.needs[1:]), g)
    return (sum_to(g, c.shapes[0]) if c.needs[0] else None, *mm)


BADDBMM = Op("Baddbmm", lambda m, a, b: m + np.matmul(a, b), _baddbmm_bwd,
             lambda needs: ((2,) if needs[1] else ()) + ((1,) if needs[2] else ()))


def baddbmm(added: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """`torch.baddbmm(added, a, b)` (beta = alpha = 1): MultiheadAttention's masked scores."""
    m, x, y = operands(added, a, b)
    return apply(BADDBMM, m, x, y)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """`torch.bmm`: one Bmm node (its operands are 3-D already)."""
    x, y = operands(a, b)
    if x.arr.ndim != 3 or y.arr.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if x.arr.ndim != 3 else "batch2 must be a 3D tensor")
    return apply(named(MATMUL, "BmmBackward0"), x, y)


def _matmul_node(nx: int, ny: int) -> str:
    """PyTorch's node for the one-node products (batched broadcasts build more there)."""
    return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (3, 3): "BmmBackward0"}.get((nx, ny), "MmBackward0")


def linear(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """PyTorch's graph for `F.linear`: `TBackward0` of the weight into `Addmm` (`Mm` without
    bias), the input flattened to 2-D by views and the result viewed back. burn's tape
    (strict) records one node, its ids count that."""
    if tape.STATE.semantics == "strict":
        return apply(LINEAR, x, w, b) if b is not None else apply(LINEAR, x, w)
    wt = transpose(w, 0, 1, "TBackward0")
    if x.arr.ndim == 2:
        return apply(ADDMM, b, x, wt) if b is not None else matmul(x, wt)
    lead, n = x.arr.shape[:-1], w.arr.shape[0]
    contiguous = x.arr.flags.c_contiguous
    if b is not None and contiguous:
        out = apply(ADDMM, b, reshape(x, (-1, x.arr.shape[-1])), wt)
        return reshape(out, lead + (n,))
    if x.arr.ndim == 1:
        return reshape(matmul(unsqueeze(x, 0), wt), (n,), "SqueezeBackward4")
    # A non-contiguous input goes through matmul's fold to rows (a view where the strides
    # allow, else a copy), and the bias is added after.
    rows = reshape(x, (-1, x.arr.shape[-1])) if contiguous else reshape_as_torch(x, (-1, x.arr.shape[-1]))
    out = reshape(matmul(rows, wt), lead + (n,), "UnsafeViewBackward0")
    return out if b is None else out + b


def reshape_as_torch(x: Tensor, shape: Sequence[int]) -> Tensor:
    """`x.reshape(shape)` as PyTorch records it: a view of a contiguous tensor, an alias
    where the strides allow one, else a copy viewed."""
    if x.arr.flags.c_contiguous:
        return reshape(x, shape)
    if np.shares_memory(x.arr.reshape(shape), x.arr):
        return reshape(x, shape, "ReshapeAliasBackward0")
    return reshape(clone(x) if x.requires_grad else x, shape, "UnsafeViewBackward0")


def _root(a: Tensor) -> Tensor:
    """The tensor a view's storage belongs to (views share its version counter)."""
    return a._base if a._base is not None else a


def reshape(a: Tensor, shape: Sequence[int], node: str = "") -> Tensor:
    """A view of another shape; `node` names the spelling's node (`UnsqueezeBackward0`)."""
    shape = tuple(int(s) for s in shape)
    out = apply(named(RESHAPE, node) if node else RESHAPE, a, shape=shape)
    out._base = _root(a)
    out._counter = a._counter
    return out


def unsqueeze(a: Tensor, dim: int) -> Tensor:
    d = dim % (a.arr.ndim + 1)
    return reshape(a, a.arr.shape[:d] + (1,) + a.arr.shape[d:], "UnsqueezeBackward0")


def transpose(a: Tensor, d0: int, d1: int, node: str = "") -> Tensor:
    nd = max(a.arr.ndim, 1)
    out = apply(named(TRANSPOSE, node) if node else TRANSPOSE, a, d0=d0 % nd, d1=d1 % nd)
    out._base, out._counter = _root(a), a._counter
    return out


def permute(a: Tensor, dims: Sequence[int]) -> Tensor:
    out = apply(PERMUTE, a, dims=tuple(d % a.arr.ndim for d in dims))
    out._base, out._counter = _root(a), a._counter
    return out


def flip(a: Tensor, dims: Sequence[int]) -> Tensor:
    return apply(FLIP, a, dims=tuple(d % a.arr.ndim for d in dims))


def roll(a: Tensor, shifts: Any, dims: Any) -> Tensor:
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return apply(ROLL, a, shifts=shifts, dims=dims)


def index(a: Tensor, key: Any, node: str = "") -> Tensor:
    """`a[key]`: basic keys are views (nothing saved), advanced keys save their indices."""
    if is_basic_key(key):
        out = apply(named(INDEX, node or _view_node(key)), a, key=key)
        out._base, out._counter = _root(a), a._counter
        return out
    return apply(named(INDEX_SAVING, node) if node else INDEX_SAVING, a, key=key)


def _view_node(key: Any) -> str:
    """PyTorch's node for a basic index: integers select, slices slice, None unsqueezes
    (a key mixing them builds a chain there; one Index node stands for it here)."""
    parts = [p for p in (key if isinstance(key, tuple) else (key,))
             if p is not Ellipsis and p != slice(None)]
    kinds = {"Select" if isinstance(p, (int, np.integer)) else "Slice" if isinstance(p, slice)
             else "Unsqueeze" for p in parts}
    single = len(kinds) == 1 and (len(parts) == 1 or "Unsqueeze" not in kinds)
    return f"{kinds.pop()}Backward0" if single else "IndexBackward0"


def _piece_grads(c: tape.Ctx, grads: Any) -> list[Tensor]:
    """One gradient per output, zeros where none arrived (PyTorch materialises them)."""
    shapes = [piece.shape for piece in c.attrs["pieces"]]
    return [g if g is not None else const(np.zeros(shape, c.dtypes[0])) for g, shape in zip(grads, shapes)]


def _split_fwd(a: np.ndarray, sizes: tuple[int, ...], dim: int) -> list[np.ndarray]:
    bounds = np.cumsum(sizes)[:-1]
    return np.split(a, bounds, axis=dim)


def _unbind_fwd(a: np.ndarray, dim: int) -> list[np.ndarray]:
    return [a[(slice(None),) * dim + (i,)] for i in range(a.shape[dim])]


# Several outputs, one node (views of the input; nothing saved); the backward joins
# the outputs' gradients back into the input's shape.
SPLIT = Op("Split", _split_fwd, lambda c, grads: (cat(_piece_grads(c, grads), c.attrs["dim"]),))
UNBIND = Op("Unbind", _unbind_fwd, lambda c, grads: (stack(_piece_grads(c, grads), c.attrs["dim"]),))


def split(a: Tensor, sizes: Sequence[int], dim: int, listed: bool) -> tuple[Tensor, ...]:
    """`a.split(size)` (PyTorch's SplitBackward0; with a list of sizes, SplitWithSizesBackward0)."""
    return _pieces(named(SPLIT, "SplitWithSizesBackward0") if listed else SPLIT, a,
                   sizes=tuple(sizes), dim=dim % a.arr.ndim)


def unsafe_chunk(a: Tensor, chunks: int, dim: int) -> tuple[Tensor, ...]:
    """ATen's `unsafe_chunk` (its RNN cells split their gates so): `UnsafeSplitBackward0`."""
    size = -(-a.arr.shape[dim] // chunks)
    return _pieces(named(SPLIT, "UnsafeSplitBackward0"), a, sizes=(size,) * chunks, dim=dim % a.arr.ndim)


def unbind(a: Tensor, dim: int) -> tuple[Tensor, ...]:
    return _pieces(UNBIND, a, dim=dim % a.arr.ndim)


def _pieces(op: Op, a: Tensor, **attrs: Any) -> tuple[Tensor, ...]:
    arrays = op.forward(a.arr, **attrs)
    outs = [Tensor(arr, base=_root(a), counter=a._counter) for arr in arrays]
    tape.record_outputs(op, (a,), outs, {**attrs, "pieces": arrays})
    return tuple(outs)


def embedding(weight: Tensor, rows: np.ndarray, padding_idx: int | None = None) -> Tensor:
    return apply(EMBEDDING, weight, rows=rows.astype(np.int64), padding_idx=padding_idx)


def index_put(a: Tensor, key: Any, value: Any) -> Tensor:
    """Out-of-place `a[key] = value` (used by backward formulas)."""
    v = value if isinstance(value, Tensor) else const(value, a.arr.dtype)
    return apply(INDEX_PUT, a, cast(v, a.arr.dtype), key=key)


def setitem(a: Tensor, key: Any, value: Any) -> None:
    v = value if isinstance(value, Tensor) else const(value, a.arr.dtype)
    apply_inplace(INDEX_PUT, a, cast(v, a.arr.dtype), key=key)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    ts = operands(*tensors)
    return apply(CAT, *ts, dim=dim % ts[0].arr.ndim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """PyTorch's one Stack node; burn's tape (strict) stacks as unsqueeze + cat."""
    nd = tensors[0].arr.ndim + 1
    if tape.STATE.semantics == "strict":
        return cat([unsqueeze(t, dim % nd) for t in tensors], dim % nd)
    return apply(STACK, *operands(*tensors), dim=dim % nd)


def clone(a: Tensor) -> Tensor:
    return apply(CLONE, a)


def pad(a: Tensor, widths: Sequence[int], value: float = 0.0) -> Tensor:
    pairs = [(0, 0)] * a.arr.ndim
    for i in range(len(widths) // 2):
        pairs[a.arr.ndim - 1 - i] = (widths[2 * i], widths[2 * i + 1])
    return apply(PAD, a, widths=tuple(pairs), value=value)


# Backward formulas above use Tensor operators (`g * saved`), which `methods`
# installs on the tape's Tensor: importing it here makes `tape` + `ops` complete.
from . import methods  # noqa: E402,F401
