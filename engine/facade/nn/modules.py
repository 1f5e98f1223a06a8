"""`torch.nn.Module`, `Parameter`, containers, and the layers training code uses."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ... import dtypes, ops, rng
from ...errors import NotSupportedByEngine, only_defaults
from ...tape import Tensor
from . import functional as F


class Parameter(Tensor):
    """A leaf that a Module registers; requires grad unless told otherwise."""

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            super().__init__(np.zeros(0, np.float32), requires_grad=requires_grad)
        else:  # same storage and version counter as `data`, as in PyTorch
            super().__init__(data.arr, requires_grad=requires_grad, counter=data._counter)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def initialised(arr: np.ndarray, writes: int = 1) -> Parameter:
    """A parameter as `reset_parameters` leaves it: each in-place init call PyTorch
    makes bumped its version (the count its in-place error prints)."""
    return Parameter(Tensor(arr.astype(np.float32), counter=[writes, None]))


def _uniform(shape: tuple[int, ...], bound: float) -> Parameter:
    return initialised(rng.generator().uniform(-bound, bound, shape, np.float32))


def factory(api: str, device: Any = None, dtype: Any = None) -> None:
    """A layer's `device=`/`dtype=`: only the CPU and float32 are modelled."""
    from ...methods import device as check_device

    if device is not None:
        check_device(device)
    if dtype is not None and dtype is not dtypes.float32:
        raise NotSupportedByEngine(f"{api}(dtype={dtype!r})")


class Module:
    """Registers parameters, buffers and submodules as attributes are set."""

    training: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # -- registration
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._discard(name)
            params[name] = value
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._discard(name)
            self._modules[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = None
        elif params is not None and name in self._buffers:
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module

    register_module = add_module

    # -- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "") -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        return (m for _, m in self.named_modules())

    def named_children(self) -> Iterator[tuple[str, Module]]:
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self) -> Iterator[Module]:
        return (m for _, m in self.named_children())

    def _named(self, store: str, prefix: str, recurse: bool) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else iter([(prefix, self)])
        for mprefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    yield (f"{mprefix}.{name}" if mprefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named("_parameters", prefix, recurse)  # type: ignore[return-value]

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        return (b for _, b in self.named_buffers(recurse=recurse))

    # -- modes and state
    def train(self, mode: bool = True) -> Module:
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> dict:
        out: dict = OrderedDict() if destination is None else destination
        for name, t in list(self.named_parameters(prefix.rstrip("."))) + \
                list(self.named_buffers(prefix.rstrip("."))):
            out[name] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True, assign: bool = False) -> Any:
        own: dict[str, Tensor] = dict(self.named_parameters())
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"missing {missing}, unexpected {unexpected}")
        from ...tape import STATE
        prev, STATE.grad_enabled = STATE.grad_enabled, False
        try:
            for k, v in state_dict.items():
                if k in own:
                    own[k].copy_(v)
        finally:
            STATE.grad_enabled = prev
        return type("IncompatibleKeys", (), {"missing_keys": missing, "unexpected_keys": unexpected})()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        for a in list(args) + list(kwargs.values()):
            if not isinstance(a, Tensor):
                from ...methods import _is_dtype, device
                if _is_dtype(a):
                    raise NotSupportedByEngine("torch.nn.Module.to(dtype)")
                device(a)
        return self

    def cpu(self) -> Module:
        return self

    def cuda(self, *args: Any) -> Module:
        raise NotSupportedByEngine("torch.nn.Module.cuda")

    def float(self) -> Module:
        return self

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"  ({n}): " + repr(m).replace("\n", "\n  ") for n, m in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


def _zero_grad(p: Tensor, set_to_none: bool) -> None:
    if p._grad is None:
        return
    if set_to_none:
        p._grad = None
    else:
        p._grad = Tensor(np.zeros_like(p._grad.arr), tid=-1)


# --------------------------------------------------------------- containers


class Sequential(Module):
    def __init__(self, *mods: Any) -> None:
        super().__init__()
        items = mods[0].items() if len(mods) == 1 and isinstance(mods[0], dict) else \
            ((str(i), m) for i, m in enumerate(mods))
        for name, m in items:
            self.add_module(name, m)

    def __getitem__(self, i: Any) -> Any:
        mods = list(self._modules.values())
        return Sequential(*mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, m: Module) -> Sequential:
        self.add_module(str(len(self)), m)
        return self

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    def __init__(self, mods: Any = None) -> None:
        super().__init__()
        for m in mods or ():
            self.append(m)

    def append(self, m: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), m)
        return self

    def extend(self, mods: Any) -> ModuleList:
        for m in mods:
            self.append(m)
        return self

    def __getitem__(self, i: Any) -> Any:
        mods = list(self._modules.values())
        return ModuleList(mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ParameterList(Module):
    """Parameters registered under their positions (`"0"`, `"1"`, ...), read
    like a list: functional learners keep their weights here and apply them
    with `F.linear(x, vars[0], vars[1])`."""

    def __init__(self, values: Any = None) -> None:
        super().__init__()
        for p in values or ():
            self.append(p)

    def append(self, p: Parameter) -> ParameterList:
        self.register_parameter(str(len(self._parameters)), p)
        return self

    def extend(self, values: Any) -> ParameterList:
        for p in values:
            self.append(p)
        return self

    def __getitem__(self, i: Any) -> Any:
        params = list(self._parameters.values())
        return ParameterList(params[i]) if isinstance(i, slice) else params[i]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())


class ModuleDict(Module):
    def __init__(self, mods: Any = None) -> None:
        super().__init__()
        for k, m in dict(mods or {}).items():
            self.add_module(k, m)

    def __getitem__(self, k: str) -> Module:
        return self._modules[k]

    def __setitem__(self, k: str, m: Module) -> None:
        self.add_module(k, m)

    def __contains__(self, k: str) -> bool:
        return k in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Any:
        return self._modules.keys()

    def values(self) -> Any:
        return self._modules.values()

    def items(self) -> Any:
        return self._modules.items()


# ------------------------------------------------------------------- layers


class Linear(Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.Linear", device, dtype)
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = _uniform((out_features, in_features), bound)
        self.bias = _uniform((out_features,), bound) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False, _weight: Any = None,
                 _freeze: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.Embedding", device, dtype)
        only_defaults("torch.nn.Embedding", max_norm=max_norm, scale_grad_by_freq=scale_grad_by_freq,
                      _weight=_weight, _freeze=_freeze)
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        arr = rng.generator().normal(0.0, 1.0, (num_embeddings, embedding_dim), np.float32)
        if padding_idx is not None:
            arr[padding_idx] = 0
        self.weight = initialised(arr, 1 if padding_idx is None else 2)

    def forward(self, idx: Tensor) -> Tensor:
        return F.embedding(idx, self.weight, self.padding_idx)


class EmbeddingBag(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Any = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.EmbeddingBag", device, dtype)
        only_defaults("torch.nn.EmbeddingBag", max_norm=max_norm, scale_grad_by_freq=scale_grad_by_freq,
                      _weight=_weight, padding_idx=padding_idx)
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.include_last_offset = include_last_offset
        self.weight = initialised(rng.generator().normal(0.0, 1.0, (num_embeddings, embedding_dim), np.float32))

    def forward(self, input: Tensor, offsets: Tensor | None = None,  # noqa: A002
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, mode=self.mode,
                               per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset)


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace)


class LayerNorm(Module):
    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.LayerNorm", device, dtype)
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.weight = initialised(np.ones(shape)) if elementwise_affine else None
        self.bias = initialised(np.zeros(shape)) if elementwise_affine and bias else None

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.GroupNorm", device, dtype)
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.weight = initialised(np.ones(num_channels)) if affine else None
        self.bias = initialised(np.zeros(num_channels)) if affine else None

    def forward(self, x: Tensor) -> Tensor:
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(Module):
    dims = 3

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory(f"torch.nn.{type(self).__name__}", device, dtype)
        only_defaults(f"torch.nn.{type(self).__name__}", track_running_stats=track_running_stats)
        self.num_features, self.eps = num_features, eps
        self.weight = initialised(np.ones(num_features)) if affine else None
        self.bias = initialised(np.zeros(num_features)) if affine else None

    def forward(self, x: Tensor) -> Tensor:
        if x.arr.ndim == self.dims - 1:  # unbatched
            return self.forward(x.unsqueeze(0)).squeeze(0)
        return F.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)


class InstanceNorm1d(_InstanceNorm):
    dims = 3


class InstanceNorm2d(_InstanceNorm):
    dims = 4


class Upsample(Module):
    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)


def _activation(name: str, fn: Callable[..., Tensor], *params: str) -> type:
    """A parameter-free module calling `fn(x, **its constructor arguments)`."""

    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        kw = {**dict(zip(params + ("inplace",), args)), **kwargs}
        if kw.get("inplace") and "inplace" not in params:
            raise NotSupportedByEngine(f"torch.nn.{name}(inplace=True)")
        object.__setattr__(self, "_kw", kw)

    def forward(self: Module, x: Tensor) -> Tensor:
        return fn(x, **self._kw)

    return type(name, (Module,), {"__init__": __init__, "forward": forward})


ReLU = _activation("ReLU", F.relu, "inplace")
ReLU6 = _activation("ReLU6", F.relu6)
Hardtanh = _activation("Hardtanh", F.hardtanh, "min_val", "max_val")
Tanh = _activation("Tanh", lambda x: ops.tanh(x))
Sigmoid = _activation("Sigmoid", lambda x: ops.sigmoid(x))
GELU = _activation("GELU", F.gelu, "approximate")
SiLU = _activation("SiLU", F.silu)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, "negative_slope")
ELU = _activation("ELU", F.elu, "alpha")
Softplus = _activation("Softplus", F.softplus, "beta", "threshold")
Softmax = _activation("Softmax", F.softmax, "dim")
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "dim")
LogSigmoid = _activation("LogSigmoid", F.logsigmoid)


def _loss(name: str, fn: Callable[..., Tensor], *params: str) -> type:
    """A loss module: constructor arguments become keyword arguments of `fn`."""

    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        object.__setattr__(self, "_kw", {**dict(zip(params, args)), **kwargs})

    def forward(self: Module, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return fn(input, target, **self._kw)

    return type(name, (Module,), {"__init__": __init__, "forward": forward})


MSELoss = _loss("MSELoss", F.mse_loss, "size_average", "reduce", "reduction")
L1Loss = _loss("L1Loss", F.l1_loss, "size_average", "reduce", "reduction")
SmoothL1Loss = _loss("SmoothL1Loss", F.smooth_l1_loss, "size_average", "reduce", "reduction", "beta")
HuberLoss = _loss("HuberLoss", F.huber_loss, "reduction", "delta")
CrossEntropyLoss = _loss("CrossEntropyLoss", F.cross_entropy, "weight", "size_average",
                         "ignore_index", "reduce", "reduction", "label_smoothing")
NLLLoss = _loss("NLLLoss", F.nll_loss, "weight", "size_average", "ignore_index", "reduce",
                "reduction")
BCEWithLogitsLoss = _loss("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, "weight",
                          "size_average", "reduce", "reduction", "pos_weight")
BCELoss = _loss("BCELoss", F.binary_cross_entropy, "weight", "size_average", "reduce", "reduction")
