"""The module a program imports as `torch` when it runs on the engine.

Only what is listed here exists; any other `torch.X` raises
`NotSupportedByEngine`, so an unmodelled API can never pass for a clean run.
`install()` puts this tree in `sys.modules` under the name `torch`.
"""

from __future__ import annotations

import builtins
import math
import sys
import warnings
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from typing import Any

import numpy as np

from .. import dtypes, methods, ops, rng, tensor_ops
from ..errors import NotSupportedByEngine, only_defaults
from ..methods import MinMax, Size, device  # noqa: F401 - torch.Size, torch.device
from ..tape import Tensor as _Tensor
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .legacy import (  # noqa: F401
    BoolTensor,
    ByteTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    Tensor,
)

__version__ = "2.13.0+tapelint.engine"

float16 = half = dtypes.float16
float32 = float = dtypes.float32  # noqa: A001 - PyTorch's names
float64 = double = dtypes.float64
uint8 = dtypes.uint8
int8 = dtypes.int8
int16 = short = dtypes.int16
int32 = int = dtypes.int32  # noqa: A001
int64 = long = dtypes.int64
bool = dtypes.bool_  # noqa: A001
dtype = dtypes.DType


# ------------------------------------------------------------------ creation


def _dtype(dtype: Any, default: np.dtype | None = None) -> np.dtype | None:
    return dtypes.as_np(dtype) if dtype is not None else default


def _make(arr: np.ndarray, requires_grad: Any = False, device: Any = None) -> _Tensor:
    if device is not None:
        methods.device(device)
    return _Tensor(arr, requires_grad=requires_grad)


def _plain(data: Any) -> Any:
    """Python data with tensors replaced by their values (torch.tensor accepts both)."""
    if isinstance(data, _Tensor):
        return data.arr
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    return data


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: Any = False,
           pin_memory: Any = False) -> _Tensor:
    if isinstance(data, _Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    plain = _plain(data)
    arr = np.array(plain, dtype=_dtype(dtype, dtypes.infer(plain) if not isinstance(data, _Tensor)
                                        else data.arr.dtype))
    return _make(arr, requires_grad, device)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> _Tensor:
    if isinstance(data, _Tensor) and dtype is None:
        return data
    return tensor(data, dtype=dtype)


def from_numpy(arr: np.ndarray) -> _Tensor:
    return _Tensor(arr)


def _creator(fill: Any) -> Any:
    def create(*size: Any, dtype: Any = None, device: Any = None, requires_grad: Any = False,
               out: Any = None, generator: Any = None, layout: Any = None, pin_memory: Any = False,
               names: Any = None) -> _Tensor:
        only_defaults("torch tensor creation", out=out, generator=generator, names=names)
        shape = methods._shape_args(size)
        return _make(fill(shape, _dtype(dtype, dtypes.DEFAULT_FLOAT.np)), requires_grad, device)
    return create


zeros = _creator(lambda s, dt: np.zeros(s, dt))
ones = _creator(lambda s, dt: np.ones(s, dt))
empty = zeros
randn = _creator(lambda s, dt: rng.generator().normal(0.0, 1.0, s, dt))
rand = _creator(lambda s, dt: rng.generator().uniform(0.0, 1.0, s, dt))
bernoulli = methods.bernoulli


def multinomial(input: _Tensor, num_samples: builtins.int, replacement: builtins.bool = False, *,  # noqa: A002
                generator: Any = None) -> _Tensor:
    only_defaults("torch.multinomial", generator=generator)
    p = input.arr.reshape(-1, input.arr.shape[-1])
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    draws = rng.generator().multinomial(p, num_samples, replacement)
    return _Tensor(draws.reshape(input.arr.shape[:-1] + (num_samples,)))


def poisson(input: _Tensor, generator: Any = None) -> _Tensor:  # noqa: A002
    """PyTorch's draws (`rng.TorchGenerator.poisson`); PyTorch's zero-gradient
    `PoissonBackward0` node for a rate that requires grad is not modelled."""
    only_defaults("torch.poisson", generator=generator)
    if input.requires_grad and is_grad_enabled():
        raise NotSupportedByEngine("torch.poisson of a tensor that requires grad")
    return _Tensor(rng.generator().poisson(input.arr).astype(input.arr.dtype))


def full(size: Sequence[builtins.int], fill_value: Any, dtype: Any = None, device: Any = None,
         requires_grad: Any = False) -> _Tensor:
    default = dtypes.infer(fill_value)
    return _make(np.full(tuple(size), fill_value, _dtype(dtype, default)), requires_grad, device)


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: Any = False) -> _Tensor:
    if end is None:
        start, end = 0, start
    default = dtypes.infer([start, end, step])
    return _make(np.arange(start, end, step).astype(_dtype(dtype, default)), requires_grad, device)


def linspace(start: Any, end: Any, steps: Any, dtype: Any = None, device: Any = None,
             requires_grad: Any = False) -> _Tensor:
    return _make(np.linspace(start, end, steps).astype(_dtype(dtype, dtypes.DEFAULT_FLOAT.np)),
                 requires_grad, device)


def eye(n: Any, m: Any = None, dtype: Any = None, device: Any = None,
        requires_grad: Any = False) -> _Tensor:
    return _make(np.eye(n, m, dtype=_dtype(dtype, dtypes.DEFAULT_FLOAT.np)), requires_grad, device)


def randint(low: Any, high: Any = None, size: Any = None, dtype: Any = None, device: Any = None,
            requires_grad: Any = False) -> _Tensor:
    if size is None:
        low, high, size = 0, low, high
    draws = rng.generator().integers(builtins.int(low), builtins.int(high), tuple(size))
    arr = draws.astype(_dtype(dtype, np.dtype(np.int64)))
    return _make(arr, requires_grad, device)


def randperm(n: Any, dtype: Any = None, device: Any = None, requires_grad: Any = False) -> _Tensor:
    return _make(rng.generator().permutation(builtins.int(n)).astype(_dtype(dtype, np.dtype(np.int64))),
                 requires_grad, device)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None, out: Any = None,
           dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = False,
           requires_grad: Any = False) -> _Tensor:
    only_defaults("torch.normal", generator=generator, out=out)
    tensors = [a for a in (mean, std) if isinstance(a, _Tensor)]
    if tensors and (requires_grad or size is not None):
        raise TypeError("normal() received an invalid combination of arguments")
    if [a for a in tensors if a.requires_grad]:
        raise NotSupportedByEngine("torch.normal with a mean or std that requires grad")
    m = mean.arr if isinstance(mean, _Tensor) else mean
    s = std.arr if isinstance(std, _Tensor) else std
    shape = tuple(size) if size is not None else np.broadcast(m, s).shape
    dt = dtypes.DEFAULT_FLOAT.np if dtype is None else dtypes.as_np(dtype)
    arr = (rng.generator().normal(0.0, 1.0, shape, dt) * s + m).astype(dt)
    return _make(arr, requires_grad, device)


def _like(fill: Any) -> Any:
    def create(t: _Tensor, dtype: Any = None, device: Any = None, requires_grad: Any = False,
               layout: Any = None, memory_format: Any = None, generator: Any = None) -> _Tensor:
        only_defaults("torch.*_like", generator=generator)
        dt = _dtype(dtype, t.arr.dtype)
        return _make(np.asarray(fill(t.arr.shape, dt)), requires_grad, device)
    return create


zeros_like = _like(lambda s, dt: np.zeros(s, dt))
ones_like = _like(lambda s, dt: np.ones(s, dt))
empty_like = zeros_like
randn_like = _like(lambda s, dt: rng.generator().normal(0.0, 1.0, s, dt))
rand_like = _like(lambda s, dt: rng.generator().uniform(0.0, 1.0, s, dt))


def full_like(t: _Tensor, fill_value: Any, dtype: Any = None, device: Any = None,
              requires_grad: Any = False) -> _Tensor:
    return _make(np.full(t.arr.shape, fill_value, _dtype(dtype, t.arr.dtype)), requires_grad, device)


def manual_seed(seed: Any) -> None:
    rng.manual_seed(seed)


def initial_seed() -> builtins.int:
    """The seed of the default generator (the engine's fixed one until manual_seed;
    PyTorch draws its own at random per process)."""
    return rng.generator().seed


def get_default_dtype() -> dtypes.DType:
    return dtypes.DEFAULT_FLOAT


def set_default_dtype(d: Any) -> None:
    if d is not dtypes.float32:
        raise NotSupportedByEngine("torch.set_default_dtype")


def is_tensor(x: Any) -> Any:
    return isinstance(x, _Tensor)


def is_floating_point(x: _Tensor) -> Any:
    return x.arr.dtype.kind == "f"


def numel(x: _Tensor) -> Any:
    return x.arr.size


# ------------------------------------------------------------------ functions

M = methods.METHODS
add, sub, subtract, mul, multiply = ops.add, ops.sub, ops.sub, ops.mul, ops.mul
div = divide = true_divide = ops.div
pow = ops.pow  # noqa: A001
neg, negative, abs, sign = ops.neg, ops.neg, ops.abs, ops.sign  # noqa: A001
exp, log, log1p, sqrt, rsqrt = ops.exp, ops.log, ops.log1p, ops.sqrt, ops.rsqrt
reciprocal, sin, cos, tanh, sigmoid, relu = (ops.reciprocal, ops.sin, ops.cos, ops.tanh,
                                             ops.sigmoid, ops.relu)
square = M["square"]
maximum, minimum, where = ops.maximum, ops.minimum, ops.where
clamp = clip = ops.clamp
clamp_min, clamp_max = M["clamp_min"], M["clamp_max"]
sum, mean, var, std, norm = ops.sum, ops.mean, ops.var, ops.std, ops.norm  # noqa: A001
logsumexp, softmax, log_softmax, cumsum = ops.logsumexp, ops.softmax, ops.log_softmax, ops.cumsum
max, min, amax, amin = M["max"], M["min"], M["amax"], M["amin"]  # noqa: A001
argmax, argmin, topk, sort, argsort = M["argmax"], M["argmin"], M["topk"], M["sort"], M["argsort"]
all, any = M["all"], M["any"]  # noqa: A001
eq, ne, gt, ge, lt, le = M["eq"], M["ne"], M["gt"], M["ge"], M["lt"], M["le"]
isnan, isfinite, equal = M["isnan"], M["isfinite"], M["equal"]
matmul = mm = dot = ops.matmul
bmm = ops.bmm
reshape, flatten, unflatten, squeeze = M["reshape"], M["flatten"], M["unflatten"], M["squeeze"]
unsqueeze, transpose, swapaxes, permute, t = (ops.unsqueeze, ops.transpose, ops.transpose,
                                              M["permute"], M["t"])
flip, roll, narrow, select = M["flip"], M["roll"], M["narrow"], M["select"]
split, chunk, unbind = M["split"], M["chunk"], M["unbind"]
gather, index_select, masked_fill = ops.gather, M["index_select"], M["masked_fill"]
cat = concat = concatenate = ops.cat
stack = ops.stack
clone = ops.clone
detach = M["detach"]
einsum, cumprod, cdist = tensor_ops.einsum, tensor_ops.cumprod, tensor_ops.cdist
scatter_add, index_add = tensor_ops.scatter_add, tensor_ops.index_add
lgamma, digamma, tril, triu = tensor_ops.lgamma, tensor_ops.digamma, tensor_ops.tril, tensor_ops.triu
xlogy = tensor_ops.xlogy
pi, e, inf, nan = math.pi, math.e, math.inf, math.nan


def diag_embed(x: _Tensor, offset: builtins.int = 0, dim1: builtins.int = -2, dim2: builtins.int = -1) -> _Tensor:
    if (offset, dim1, dim2) != (0, -2, -1):
        raise NotSupportedByEngine("torch.diag_embed with offset or dims")
    k = x.arr.shape[-1]
    base = ops.const(np.zeros(x.arr.shape + (k,), x.arr.dtype))
    return ops.index_put(base, (Ellipsis, np.arange(k), np.arange(k)), x)


def diag(x: _Tensor, diagonal: builtins.int = 0) -> _Tensor:
    if diagonal:
        raise NotSupportedByEngine("torch.diag with an offset")
    if x.arr.ndim == 1:
        return diag_embed(x)
    k = builtins.min(x.arr.shape)
    return ops.index(x, (np.arange(k), np.arange(k)))


def allclose(a: _Tensor, b: _Tensor, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Any:
    return np.allclose(a.arr, b.arr, rtol=rtol, atol=atol, equal_nan=equal_nan)


def broadcast_tensors(*ts: _Tensor) -> tuple[_Tensor, ...]:
    shape = np.broadcast_shapes(*(t.arr.shape for t in ts))
    return tuple(ops.expand(t, shape) for t in ts)


# --------------------------------------------------------------- submodules

from . import autograd, backends, cuda, distributions, func, linalg, nn, optim, utils  # noqa: E402
from .nn import functional as _functional  # noqa: E402,F401

vmap = func.vmap


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.{name}")


# torch.X -> this package's module that stands for it
SUBMODULES = {"autograd": "autograd", "autograd.function": "function", "autograd.graph": "graph",
              "backends": "backends", "backends.mkldnn": "backends.mkldnn", "backends.cudnn": "backends.cudnn",
              "cuda": "cuda",
              "linalg": "linalg", "nn": "nn", "nn.functional": "nn.functional", "nn.init": "nn.init",
              "nn.utils": "nn.utils", "nn.utils.rnn": "nn.packing", "optim": "optim",
              "optim.lr_scheduler": "lr_scheduler",
              "utils": "utils", "utils.data": "data", "distributions": "distributions", "func": "func",
              **{f"distributions.{m}": "distributions" for m in
                 ("normal", "categorical", "bernoulli", "multivariate_normal", "beta", "kl",
                  "one_hot_categorical", "uniform", "independent", "gamma", "dirichlet", "poisson",
                  "log_normal", "transformed_distribution", "transforms")}}


class _Unsupported(MetaPathFinder):
    """Any `torch.*` submodule the facade lacks fails as unsupported, not as missing."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.startswith("torch.") and fullname not in sys.modules:
            raise NotSupportedByEngine(fullname)
        return None


_FINDER = _Unsupported()


def install() -> None:
    """Make `import torch` (and its listed submodules) load this facade."""
    me = sys.modules[__name__]
    sys.modules["torch"] = me
    for name, sub in SUBMODULES.items():
        mod = sys.modules["torch." + name] = sys.modules[f"{__name__}.{sub}"]
        if not hasattr(mod, "__path__"):  # a package to the import system, so that an unknown
            mod.__path__ = []  # torch.X.Y reaches _Unsupported
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    for name in ["torch"] + ["torch." + s for s in SUBMODULES]:
        sys.modules.pop(name, None)
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)

