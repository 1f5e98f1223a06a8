"""The `torch.Tensor` surface: operators and methods, attached to the tape's Tensor.

Each method is a thin spelling of a function in `ops`; anything not listed
here raises `NotSupportedByEngine` (see `Tensor.__getattr__` below).
"""

from __future__ import annotations

import copy
import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes, ops, rng, tensor_ops, tensor_str
from .errors import NUMPY_REQUIRES_GRAD, NotSupportedByEngine
from .tape import STATE, Tensor, apply_inplace

MinMax = namedtuple("MinMax", ["values", "indices"])


class Size(tuple):
    """`torch.Size`: a tuple that also answers numel()."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"


class device:  # noqa: N801 - PyTorch's name
    """Only the CPU exists here."""

    def __init__(self, spec: Any = "cpu", index: int | None = None) -> None:
        self.type: str = str(spec.type if isinstance(spec, device) else spec).split(":")[0]
        if self.type != "cpu":
            raise NotSupportedByEngine(f"torch.device({spec!r})")
        self.index = index

    def __eq__(self, other: object) -> bool:
        return str(other) == "cpu" or isinstance(other, device) and other.type == self.type

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"


CPU = device("cpu")
_DEVICE = device  # for functions whose `device` argument hides the class


def _shape_args(args: Sequence[Any]) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        shape = tuple(numel // known if s == -1 else s for s in shape)
    return shape


def _is_dtype(x: Any) -> bool:
    return isinstance(x, dtypes.DType) or x in (float, int, bool)


# -- conversions out of autograd ----------------------------------------------


def item(self: Tensor) -> Any:
    if self.arr.size != 1:
        raise RuntimeError(f"a Tensor with {self.arr.size} elements cannot be converted to Scalar")
    return self.arr.reshape(()).item()


def tolist(self: Tensor) -> Any:
    return self.arr.tolist()


def numpy(self: Tensor, force: bool = False) -> np.ndarray:
    if self.requires_grad and not force:
        raise RuntimeError(NUMPY_REQUIRES_GRAD)
    return self.arr


def detach(self: Tensor) -> Tensor:
    return Tensor(self.arr, counter=self._counter)


def detach_(self: Tensor) -> Tensor:
    self._node = None
    self._rg = False
    return self


def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    self.requires_grad = requires_grad
    return self


def _get_data(self: Tensor) -> Tensor:
    return Tensor(self.arr)


def _set_data(self: Tensor, value: Tensor) -> None:
    self.arr = value.arr if isinstance(value, Tensor) else np.asarray(value)


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    dtype = kwargs.get("dtype")
    for a in list(args) + [kwargs.get("device")]:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif _is_dtype(a):
            dtype = a
        elif a is not None:
            device(a)  # raises for anything but the CPU
    if dtype is None:
        return self
    return ops.cast(self, dtypes.as_np(dtype))


def _caster(dt: dtypes.DType) -> Callable[[Tensor], Tensor]:
    return lambda self, *a, **k: ops.cast(self, dt.np)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    return ops.cast(self, other.arr.dtype)


def cuda(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    raise NotSupportedByEngine("torch.Tensor.cuda")


# -- shape ----------------------------------------------------------------------


def size(self: Tensor, dim: int | None = None) -> Any:
    return Size(self.arr.shape) if dim is None else self.arr.shape[dim]


def view(self: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and _is_dtype(shape[0]):
        raise NotSupportedByEngine("torch.Tensor.view(dtype)")
    return ops.reshape(self, _infer_shape(_shape_args(shape), self.arr.size))


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    shape = self.arr.shape
    if not shape:
        return ops.reshape(self, (1,))
    s, e = start_dim % len(shape), end_dim % len(shape)
    n = 1
    for d in shape[s:e + 1]:
        n *= d
    return ops.reshape(self, shape[:s] + (n,) + shape[e + 1:])


def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = dim % self.arr.ndim
    sizes = _infer_shape(tuple(sizes), self.arr.shape[d])
    return ops.reshape(self, self.arr.shape[:d] + sizes + self.arr.shape[d + 1:])


def squeeze(self: Tensor, dim: Any = None) -> Tensor:
    shape = self.arr.shape
    dims: Sequence[int] = range(len(shape)) if dim is None else ops.norm_dims(dim, len(shape)) or ()
    node = "SqueezeBackward0" if dim is None else "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"
    return ops.reshape(self, tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)), node)


def expand(self: Tensor, *shape: Any) -> Tensor:
    return ops.expand(self, _shape_args(shape))


def repeat(self: Tensor, *reps: Any) -> Tensor:
    return ops.apply(ops.REPEAT, self, reps=_shape_args(reps))


def permute(self: Tensor, *dims: Any) -> Tensor:
    return ops.permute(self, _shape_args(dims))


def t(self: Tensor) -> Tensor:
    return self if self.arr.ndim < 2 else ops.transpose(self, 0, 1, "TBackward0")


def contiguous(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """PyTorch copies a non-contiguous tensor (a CloneBackward0 node); burn has no such op."""
    if self.arr.flags.c_contiguous or STATE.semantics == "strict":
        return self
    return ops.clone(self)


def flip(self: Tensor, *dims: Any) -> Tensor:
    return ops.flip(self, _shape_args(dims))


def split(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """PyTorch's one node for all pieces; burn's tape (strict) slices each piece."""
    n = self.arr.shape[dim]
    listed = not isinstance(split_size, int)
    sizes = list(split_size) if listed else \
        [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    if STATE.semantics == "strict":
        return _pieces(self, sizes, dim)
    return ops.split(self, sizes, dim, listed)


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    n = self.arr.shape[dim]
    return split(self, -(-n // chunks), dim)


def _pieces(self: Tensor, sizes: Sequence[int], dim: int) -> tuple[Tensor, ...]:
    out, start = [], 0
    d = dim % self.arr.ndim
    for s in sizes:
        out.append(ops.index(self, (slice(None),) * d + (slice(start, start + s),)))
        start += s
    return tuple(out)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    if STATE.semantics != "strict":
        return ops.unbind(self, dim)
    d = dim % self.arr.ndim
    return tuple(ops.index(self, (slice(None),) * d + (i,)) for i in range(self.arr.shape[d]))


def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = dim % self.arr.ndim
    return ops.index(self, (slice(None),) * d + (slice(start, start + length),))


def select(self: Tensor, dim: int, index: int) -> Tensor:
    d = dim % self.arr.ndim
    return ops.index(self, (slice(None),) * d + (index,))


def _key(key: Any) -> Any:
    """Tensors inside an index become numpy arrays (bool masks stay masks)."""
    if isinstance(key, tuple):
        return tuple(_key(k) for k in key)
    if isinstance(key, Tensor):
        return key.arr
    if isinstance(key, list):
        return np.asarray([k.item() if isinstance(k, Tensor) else k for k in key])
    return key


def getitem(self: Tensor, key: Any) -> Tensor:
    return ops.index(self, _key(key))


def setitem(self: Tensor, key: Any, value: Any) -> None:
    ops.setitem(self, _key(key), value)


def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    d = dim % self.arr.ndim
    return ops.index(self, (slice(None),) * d + (np.asarray(_key(index)),), "IndexSelectBackward0")


def masked_fill(self: Tensor, mask: Any, value: Any) -> Tensor:
    return ops.where(mask, value.item() if isinstance(value, Tensor) else value, self, "MaskedFillBackward0")


def _iter(self: Tensor) -> Any:
    if self.arr.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


# -- reductions -------------------------------------------------------------------


def _extreme(largest: bool) -> Callable[..., Any]:
    def fn(self: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
        if isinstance(dim, Tensor):
            return ops.maximum(self, dim) if largest else ops.minimum(self, dim)
        if dim is None:
            return ops.extreme(self, largest)
        idx = ops.arg_extreme(self, dim, True, largest)
        node = "MaxBackward0" if largest else "MinBackward0"
        if STATE.semantics == "strict":  # burn: max_dim keeps the dim, a squeeze is a node of its own
            values = ops.along(self, dim, idx.arr, True, node)
            return MinMax(values if keepdim else squeeze(values, dim), idx if keepdim else squeeze(idx, dim))
        values = ops.along(self, dim, idx.arr, keepdim, node)
        return MinMax(values, idx if keepdim else squeeze(idx, dim))
    return fn


def _amax(largest: bool) -> Callable[..., Tensor]:
    def fn(self: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
        if dim == () or dim is None:
            return ops.extreme(self, largest)
        return ops.amax(self, dim, keepdim, largest)
    return fn


def _arg(largest: bool) -> Callable[..., Tensor]:
    return lambda self, dim=None, keepdim=False: ops.arg_extreme(self, dim, keepdim, largest)


def _ranked(self: Tensor, k: int, dim: int, largest: bool, node: str) -> MinMax:
    d = dim % self.arr.ndim
    order = np.argsort(-self.arr if largest else self.arr, axis=d, kind="stable")
    idx = np.take(order, np.arange(k), axis=d)
    return MinMax(ops.along(self, d, idx, True, node), Tensor(idx.astype(np.int64)))


def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> MinMax:
    return _ranked(self, k, dim, largest, "TopkBackward0")


def sort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> MinMax:
    return _ranked(self, self.arr.shape[dim], dim, descending, "SortBackward0")


def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
    return sort(self, dim, descending).indices


def _logical(fn: Callable[..., np.ndarray]) -> Callable[..., Tensor]:
    def method(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
        return Tensor(np.asarray(fn(self.arr, axis=dim, keepdims=keepdim)))
    return method


# -- operators ----------------------------------------------------------------------


def _compare(fn: Callable[..., np.ndarray]) -> Callable[[Tensor, Any], Any]:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, *ops.Number)):
            return NotImplemented
        a, b = ops.operands(self, other)
        return Tensor(np.asarray(fn(a.arr, b.arr)))
    return method


def _bitwise(fn: Callable[..., np.ndarray]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        a, b = ops.operands(self, other)
        return Tensor(np.asarray(fn(a.arr, b.arr)))
    return method


def _reflected(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    return lambda self, other: fn(other, self)


def _binary(fn: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Any]:
    def method(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, *ops.Number)):
            return NotImplemented
        return fn(self, other)
    return method


def _inplace(op: ops.Op, prep: Callable[[Tensor, Any], Tensor] | None = None,
             **fixed: Any) -> Callable[..., Tensor]:
    def method(self: Tensor, other: Any = None, *, alpha: float = 1) -> Tensor:
        if other is None:
            return apply_inplace(op, self, **fixed)
        if alpha != 1:
            other = other * alpha
        o = other if isinstance(other, Tensor) else ops.const(other)
        return apply_inplace(op, self, ops.cast(o, self.arr.dtype), **fixed)
    return method


def floordiv(a: Any, b: Any) -> Tensor:
    return ops.div(a, b, rounding_mode="floor")


def mod(a: Any, b: Any) -> Tensor:
    x, y = ops.operands(a, b)
    return Tensor(np.mod(x.arr, y.arr))


def matmul(a: Any, b: Any) -> Tensor:
    return ops.matmul(a, b)


# -- in-place updates that are not differentiable (init, optimizers) -----------------


def _fill(self: Tensor, value: Any) -> Tensor:
    return apply_inplace(ops.INDEX_PUT, self, ops.const(value, self.arr.dtype), key=Ellipsis)


def zero_(self: Tensor) -> Tensor:
    return _fill(self, 0)


def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    src = src if isinstance(src, Tensor) else ops.const(src)
    return apply_inplace(ops.INDEX_PUT, self, ops.cast(src, self.arr.dtype), key=Ellipsis)


def _random_(draw: Callable[..., np.ndarray]) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        values = draw(rng.generator(), self.arr.shape, self.arr.dtype, *args, **kwargs)
        return _fill(self, values)
    return method


def _bernoulli_draw(gen: rng.TorchGenerator, like: Tensor, p: Any) -> np.ndarray:
    """PyTorch's two CPU kernels: a scalar p, or a tensor of probabilities."""
    if isinstance(p, Tensor):
        return gen.bernoulli(np.broadcast_to(p.arr, like.arr.shape)).astype(like.arr.dtype)
    return gen.bernoulli_scalar(float(p), like.arr.shape).astype(like.arr.dtype)


def bernoulli(self: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """`torch.bernoulli(probs)`, or with a scalar `p` a tensor shaped like the input."""
    if generator is not None:
        raise NotSupportedByEngine("torch.bernoulli(generator=...)")
    return Tensor(_bernoulli_draw(rng.generator(), self, self if p is None else p))


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    if generator is not None:
        raise NotSupportedByEngine("torch.Tensor.bernoulli_(generator=...)")
    return _fill(self, _bernoulli_draw(rng.generator(), self, p))


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    return apply_inplace(ops.CLAMP, self, lo=min, hi=max)


def masked_fill_(self: Tensor, mask: Any, value: Any) -> Tensor:
    m = mask.arr if isinstance(mask, Tensor) else np.asarray(mask)
    v = value if isinstance(value, Tensor) else ops.const(value, self.arr.dtype)
    return apply_inplace(ops.INDEX_PUT, self, ops.cast(v, self.arr.dtype), key=m.astype(bool))


def _new(make: Callable[..., np.ndarray]) -> Callable[..., Tensor]:
    """`x.new_*(...)`: x's dtype unless told otherwise; the options PyTorch accepts."""
    def method(self: Tensor, *args: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
        if device is not None:
            _DEVICE(device)
        arr = make(self, *args).astype(dtypes.as_np(dtype) if dtype is not None else self.arr.dtype)
        return Tensor(arr, requires_grad=requires_grad)
    return method


def legacy_new(dt: dtypes.DType, args: tuple, dev: Any = None) -> Tensor:
    """PyTorch's legacy constructor (`torch.Tensor(2, 3)`, `x.new([1, 2])`): integers or a
    Size give an uninitialised (here zero) tensor of that shape, data gives its values, a
    tensor is returned as an alias."""
    if dev is not None:
        _DEVICE(dev)
    if not args:
        return Tensor(np.zeros(0, dt.np))
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0]
    if all(isinstance(a, (int, np.integer)) for a in args) or \
            (len(args) == 1 and isinstance(args[0], Size)):
        return Tensor(np.zeros(_shape_args(args), dt.np))
    if len(args) == 1:
        return Tensor(np.array(args[0], dtype=dt.np))
    raise TypeError(f"new() received an invalid combination of arguments - got {args!r}")


# -- printing -------------------------------------------------------------------------


def _repr(self: Tensor) -> str:
    """PyTorch's text for the tensor (`tensor_str`), with its suffixes."""
    suffixes = []
    if self.arr.size == 0 and self.arr.ndim != 1:
        suffixes.append(f"size={tuple(self.arr.shape)}")
    if self.arr.dtype not in (dtypes.DEFAULT_FLOAT.np, np.int64, np.bool_):
        suffixes.append(f"dtype={dtypes.from_np(self.arr.dtype)!r}")
    if self._node is not None:
        suffixes.append(f"grad_fn=<{self._node.name()}>")
    elif self._rg:
        suffixes.append("requires_grad=True")
    return tensor_str.with_suffixes("tensor(" + tensor_str.body(self.arr, len("tensor(")), suffixes, len("tensor("))


def _format(self: Tensor, spec: str) -> str:
    return format(item(self), spec) if self.arr.size == 1 and spec else _repr(self)


def _scalar(kind: Callable[[Any], Any]) -> Callable[[Tensor], Any]:
    def method(self: Tensor) -> Any:
        if self.requires_grad and kind is float:
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                          "unexpected behavior.\nConsider using tensor.detach() first.",
                          UserWarning, stacklevel=2)
        return kind(item(self))
    return method


def _bool(self: Tensor) -> bool:
    if self.arr.size != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.arr.reshape(()))


def _array(self: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
    arr = numpy(self)
    return arr.astype(dtype) if dtype is not None else arr


def _deepcopy(self: Tensor, memo: dict) -> Tensor:
    if self._node is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.  If you were attempting to "
                           "deepcopy a module, this may be because of a torch.nn.utils.weight_norm "
                           "usage, see https://github.com/pytorch/pytorch/pull/103001")
    new = copy.copy(self)
    new.arr = self.arr.copy()
    new._counter = [0, None]
    new._grad = copy.deepcopy(self._grad, memo)
    new._hooks = None  # PyTorch copies no hooks
    new._id = Tensor(np.zeros(0))._id
    memo[id(self)] = new
    return new


def _unsupported(self: Tensor, name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.Tensor.{name}")


METHODS: dict[str, Any] = {
    # conversions
    "item": item, "tolist": tolist, "numpy": numpy, "detach": detach, "detach_": detach_,
    "requires_grad_": requires_grad_, "to": to, "type_as": type_as, "cuda": cuda,
    "cpu": lambda self, *a, **k: self,
    "contiguous": contiguous,
    "float": _caster(dtypes.float32), "double": _caster(dtypes.float64),
    "half": _caster(dtypes.float16), "long": _caster(dtypes.int64), "int": _caster(dtypes.int32),
    "bool": _caster(dtypes.bool_), "clone": lambda self, **k: ops.clone(self),
    # shape
    "size": size, "dim": lambda self: self.arr.ndim, "ndimension": lambda self: self.arr.ndim,
    "numel": lambda self: int(self.arr.size), "nelement": lambda self: int(self.arr.size),
    "element_size": lambda self: self.arr.itemsize,
    "is_floating_point": lambda self: self.arr.dtype.kind == "f",
    "view": view, "reshape": view, "view_as": lambda self, o: view(self, o.arr.shape),
    "reshape_as": lambda self, o: view(self, o.arr.shape),
    "flatten": flatten, "unflatten": unflatten, "squeeze": squeeze,
    "unsqueeze": ops.unsqueeze, "transpose": ops.transpose, "swapaxes": ops.transpose,
    "permute": permute, "t": t, "expand": expand,
    "expand_as": lambda self, o: ops.expand(self, o.arr.shape), "repeat": repeat, "flip": flip,
    "roll": lambda self, shifts, dims=None: ops.roll(self, shifts, dims if dims is not None else 0),
    "split": split, "chunk": chunk, "unbind": unbind, "narrow": narrow, "select": select,
    "index_select": index_select, "gather": ops.gather, "masked_fill": masked_fill,
    "where": lambda self, cond, other: ops.where(cond, self, other),
    # arithmetic
    "add": ops.add, "sub": ops.sub, "subtract": ops.sub, "mul": ops.mul, "multiply": ops.mul,
    "div": ops.div, "divide": ops.div, "true_divide": ops.div, "pow": ops.pow,
    "square": lambda self: ops.pow(self, 2), "neg": ops.neg, "negative": ops.neg,
    "abs": ops.abs, "sign": ops.sign, "exp": ops.exp, "log": ops.log, "log1p": ops.log1p,
    "sqrt": ops.sqrt, "rsqrt": ops.rsqrt, "reciprocal": ops.reciprocal, "sin": ops.sin,
    "cos": ops.cos, "tanh": ops.tanh, "sigmoid": ops.sigmoid, "relu": ops.relu,
    "clamp": ops.clamp, "clip": ops.clamp,
    "clamp_min": lambda self, m: ops.clamp(self, min=m, node="ClampMinBackward0"),
    "clamp_max": lambda self, m: ops.clamp(self, max=m, node="ClampMaxBackward0"),
    "maximum": ops.maximum, "minimum": ops.minimum,
    "matmul": matmul, "mm": matmul, "bmm": ops.bmm, "dot": matmul,
    # reductions
    "sum": ops.sum, "mean": ops.mean, "var": ops.var, "std": ops.std, "norm": ops.norm,
    "max": _extreme(True), "min": _extreme(False), "amax": _amax(True), "amin": _amax(False),
    "argmax": _arg(True), "argmin": _arg(False), "logsumexp": ops.logsumexp,
    "softmax": ops.softmax, "log_softmax": ops.log_softmax, "cumsum": ops.cumsum,
    "topk": topk, "sort": sort, "argsort": argsort, "cumprod": tensor_ops.cumprod,
    "scatter_add": tensor_ops.scatter_add, "index_add": tensor_ops.index_add,
    "unfold": tensor_ops.unfold, "tril": tensor_ops.tril, "triu": tensor_ops.triu,
    "lgamma": tensor_ops.lgamma, "digamma": tensor_ops.digamma, "xlogy": tensor_ops.xlogy,
    "scatter_add_": lambda self, dim, index, src: apply_inplace(
        tensor_ops.SCATTER_ADD, self, ops.cast(src, self.arr.dtype), dim=dim % self.arr.ndim,
        idx=index.arr.astype(np.int64)),
    "index_add_": lambda self, dim, index, source, alpha=1: apply_inplace(
        tensor_ops.INDEX_ADD, self, ops.cast(source, self.arr.dtype), dim=dim % self.arr.ndim,
        idx=index.arr.astype(np.int64).ravel(), alpha=alpha),
    "all": _logical(np.all), "any": _logical(np.any),
    "eq": _compare(np.equal), "ne": _compare(np.not_equal), "gt": _compare(np.greater),
    "ge": _compare(np.greater_equal), "lt": _compare(np.less), "le": _compare(np.less_equal),
    "isnan": lambda self: Tensor(np.isnan(self.arr)),
    "isfinite": lambda self: Tensor(np.isfinite(self.arr)),
    "equal": lambda self, o: bool(np.array_equal(self.arr, o.arr)),
    # in place
    "add_": _inplace(ops.ADD), "sub_": _inplace(ops.SUB), "mul_": _inplace(ops.MUL),
    "div_": _inplace(ops.DIV), "relu_": _inplace(ops.RELU), "zero_": zero_, "fill_": _fill,
    "copy_": copy_, "clamp_": clamp_, "masked_fill_": masked_fill_,
    "bernoulli": bernoulli, "bernoulli_": bernoulli_,
    "normal_": _random_(lambda g, shape, dt, mean=0.0, std=1.0: g.normal(mean, std, shape, dt)),
    "uniform_": _random_(lambda g, shape, dt, a=0.0, b=1.0: g.uniform(a, b, shape, dt)),
    "new_zeros": _new(lambda self, *s: np.zeros(_shape_args(s))),
    "new_ones": _new(lambda self, *s: np.ones(_shape_args(s))),
    "new_empty": _new(lambda self, *s: np.zeros(_shape_args(s))),
    "new_full": _new(lambda self, size, value: np.full(_shape_args((size,)), value)),
    "new_tensor": _new(lambda self, data: np.array(data.arr if isinstance(data, Tensor) else data)),
    "new": lambda self, *args, device=None: legacy_new(dtypes.from_np(self.arr.dtype), args, device),
    # dunders
    "__add__": _binary(ops.add), "__radd__": _binary(_reflected(ops.add)),
    "__sub__": _binary(ops.sub), "__rsub__": _binary(_reflected(ops.sub)),
    "__mul__": _binary(ops.mul), "__rmul__": _binary(_reflected(ops.mul)),
    "__truediv__": _binary(ops.div), "__rtruediv__": _binary(_reflected(ops.div)),
    "__floordiv__": _binary(floordiv), "__rfloordiv__": _binary(_reflected(floordiv)),
    "__mod__": _binary(mod), "__pow__": _binary(ops.pow),
    "__rpow__": _binary(_reflected(ops.pow)), "__matmul__": matmul,
    "__rmatmul__": _reflected(matmul),
    "__iadd__": _inplace(ops.ADD), "__isub__": _inplace(ops.SUB), "__imul__": _inplace(ops.MUL),
    "__itruediv__": _inplace(ops.DIV),
    "__neg__": ops.neg, "__pos__": lambda self: self, "__abs__": ops.abs,
    "__eq__": _compare(np.equal), "__ne__": _compare(np.not_equal),
    "__lt__": _compare(np.less), "__le__": _compare(np.less_equal),
    "__gt__": _compare(np.greater), "__ge__": _compare(np.greater_equal),
    "__and__": _bitwise(np.logical_and), "__or__": _bitwise(np.logical_or),
    "__xor__": _bitwise(np.logical_xor), "__invert__": lambda self: Tensor(np.logical_not(self.arr)
                                                                          if self.arr.dtype == bool
                                                                          else ~self.arr),
    "__getitem__": getitem, "__setitem__": setitem,
    "__len__": lambda self: self.arr.shape[0], "__iter__": _iter, "__bool__": _bool,
    "__float__": _scalar(float), "__int__": _scalar(int), "__index__": _scalar(int),
    "__repr__": _repr, "__str__": _repr, "__format__": _format, "__array__": _array,
    "__deepcopy__": _deepcopy, "__getattr__": _unsupported,
}
PROPERTIES: dict[str, property] = {
    "shape": property(lambda self: Size(self.arr.shape)),
    "ndim": property(lambda self: self.arr.ndim),
    "dtype": property(lambda self: dtypes.from_np(self.arr.dtype)),
    "device": property(lambda self: CPU),
    "is_cuda": property(lambda self: False),
    "T": property(lambda self: permute(self, tuple(reversed(range(self.arr.ndim))))),
    "mT": property(lambda self: ops.transpose(self, -2, -1)),
    "data": property(_get_data, _set_data),
}


def install() -> None:
    """Attach the surface to the tape's Tensor (idempotent)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, prop in PROPERTIES.items():
        setattr(Tensor, name, prop)


install()
