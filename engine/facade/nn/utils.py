"""`torch.nn.utils`: gradient clipping (an in-place update of `.grad`, outside the graph)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ... import ops
from ...errors import NotSupportedByEngine, only_defaults
from ...tape import Tensor
from . import packing as rnn  # noqa: F401 - torch.nn.utils.rnn


def _grads(parameters: Any) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p._grad for p in params if p._grad is not None]


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    only_defaults("torch.nn.utils.clip_grad_norm_", error_if_nonfinite=error_if_nonfinite)
    grads = _grads(parameters)
    if norm_type == float("inf"):
        total = max((float(np.abs(g.arr).max()) for g in grads), default=0.0)
    else:
        total = float(sum(float(np.sum(np.abs(g.arr) ** norm_type)) for g in grads) ** (1.0 / norm_type))
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g.arr *= np.asarray(coef, g.arr.dtype)
            g._counter[0] += 1
    return ops.const(np.asarray(total, np.float32))


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: Any = None) -> None:
    for g in _grads(parameters):
        np.clip(g.arr, -clip_value, clip_value, out=g.arr)
        g._counter[0] += 1


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.utils.{name}")
