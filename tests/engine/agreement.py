"""The check the op tables share: run one function of (library, *leaves) on PyTorch and on
the engine from the same random arrays; values and gradients agree at rtol 1e-4."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import numpy as np


def run_with_gradients(L: Any, fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    ts = [L.tensor(a, requires_grad=True) for a in arrays]
    y = fn(L, *ts)
    (y * y.detach().sin()).sum().backward()
    return [y.detach().numpy().copy()] + [t.grad.numpy().copy() for t in ts]


def assert_agrees(engine: Any, torch: Any, fn: Callable[..., Any], shapes: Sequence[tuple],
                  seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    for got, want in zip(run_with_gradients(engine, fn, arrays), run_with_gradients(torch, fn, arrays)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
