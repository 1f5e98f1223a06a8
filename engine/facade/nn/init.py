"""`torch.nn.init`: in-place initialisers (they run under no_grad, as in PyTorch)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import rng
from ...errors import NotSupportedByEngine
from ...tape import STATE, Tensor


def _fill(t: Tensor, values: np.ndarray) -> Tensor:
    prev, STATE.grad_enabled = STATE.grad_enabled, False
    try:
        return t.copy_(Tensor(np.asarray(values, dtype=t.arr.dtype), tid=-1))
    finally:
        STATE.grad_enabled = prev


def _fans(t: Tensor) -> tuple[int, int]:
    shape = t.arr.shape
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in = shape[1] * receptive if len(shape) > 1 else shape[0]
    return fan_in, shape[0] * receptive


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, **_: Any) -> Tensor:
    return _fill(t, rng.generator().uniform(a, b, t.arr.shape))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, **_: Any) -> Tensor:
    return _fill(t, rng.generator().normal(mean, std, t.arr.shape))


def constant_(t: Tensor, val: float) -> Tensor:
    return _fill(t, np.full(t.arr.shape, val))


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def eye_(t: Tensor) -> Tensor:
    return _fill(t, np.eye(*t.arr.shape))


def xavier_uniform_(t: Tensor, gain: float = 1.0, **_: Any) -> Tensor:
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Tensor, gain: float = 1.0, **_: Any) -> Tensor:
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     **_: Any) -> Tensor:
    fan = _fans(t)[0 if mode == "fan_in" else 1]
    gain = math.sqrt(2.0 / (1 + a * a)) if nonlinearity in ("leaky_relu", "relu") else 1.0
    bound = gain * math.sqrt(3.0 / fan)
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    **_: Any) -> Tensor:
    fan = _fans(t)[0 if mode == "fan_in" else 1]
    gain = math.sqrt(2.0 / (1 + a * a)) if nonlinearity in ("leaky_relu", "relu") else 1.0
    return normal_(t, 0.0, gain / math.sqrt(fan))


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.init.{name}")
