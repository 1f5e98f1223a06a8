"""`torch.nn.init`: in-place initialisers (they run under no_grad, as in PyTorch)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import rng
from ...errors import NotSupportedByEngine, only_defaults
from ...tape import STATE, Tensor


def _fill(t: Tensor, values: np.ndarray) -> Tensor:
    prev, STATE.grad_enabled = STATE.grad_enabled, False
    try:
        return t.copy_(Tensor(np.asarray(values, dtype=t.arr.dtype), tid=-1))
    finally:
        STATE.grad_enabled = prev


def _fans(t: Tensor) -> tuple[int, int]:
    shape = t.arr.shape
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    only_defaults("torch.nn.init.uniform_", generator=generator)
    return _fill(t, rng.generator().uniform(a, b, t.arr.shape, t.arr.dtype))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    only_defaults("torch.nn.init.normal_", generator=generator)
    return _fill(t, rng.generator().normal(mean, std, t.arr.shape, t.arr.dtype))


def trunc_normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Any = None) -> Tensor:
    """PyTorch 2.13's sampler on its stream: when [a, b] holds more than 0.3 of the mass,
    full normal draws, each element redrawn from the next full draw until inside;
    else uniform candidates in [a, b] accepted by a uniform against the density."""
    only_defaults("torch.nn.init.trunc_normal_", generator=generator)
    gen, shape, kind = rng.generator(), t.arr.shape, t.arr.dtype

    def cdf(v: float) -> float:
        return (1.0 + math.erf(v / math.sqrt(2.0))) / 2.0

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = kind.type(a), kind.type(b)
        values = gen.normal(mean, std, shape, kind)
        while (bad := (values < lo) | (values > hi)).any():
            values = np.where(bad, gen.normal(mean, std, shape, kind), values)
        return _fill(t, values)
    log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

    def below_density(candidates: np.ndarray) -> np.ndarray:
        log_pdf = (((candidates - kind.type(mean)) / kind.type(std)) ** 2 * kind.type(-0.5)
                   - kind.type(log_peak))
        with np.errstate(divide="ignore"):
            return np.log(gen.uniform(0.0, 1.0, shape, kind)) > log_pdf

    values = gen.uniform(a, b, shape, kind)
    pending = below_density(values)
    while pending.any():
        candidates = gen.uniform(a, b, shape, kind)
        values = np.where(pending, candidates, values)
        pending = np.where(pending, below_density(candidates), pending)
    return _fill(t, values)


def constant_(t: Tensor, val: float) -> Tensor:
    return _fill(t, np.full(t.arr.shape, val))


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def eye_(t: Tensor) -> Tensor:
    return _fill(t, np.eye(*t.arr.shape))


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _fans(t)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(t: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan = _fans(t)[0 if mode == "fan_in" else 1]
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Any = None) -> Tensor:
    bound = math.sqrt(3.0) * _kaiming_std(t, a, mode, nonlinearity)
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Any = None) -> Tensor:
    return normal_(t, 0.0, _kaiming_std(t, a, mode, nonlinearity), generator)


def orthogonal_(t: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """PyTorch's recipe: QR of a normal matrix (rows x columns, transposed when wide),
    signs fixed by R's diagonal."""
    only_defaults("torch.nn.init.orthogonal_", generator=generator)
    if t.arr.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = t.arr.shape[0]
    cols = t.arr.size // rows if rows else 0
    flat = rng.generator().normal(0.0, 1.0, (rows, cols), np.float32).astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(t, gain * q.reshape(t.arr.shape))


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.init.{name}")
