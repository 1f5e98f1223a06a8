"""The check the op tables share: run one function of (library, *leaves) on PyTorch and on
the engine from the same random arrays; values and gradients agree at rtol 1e-4."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def mkl_on_intel() -> bool:
    """Whether PyTorch may draw scalar-p Bernoulli masks and exponential keys through MKL
    here (an MKL build on an Intel CPU), which the engine does not reproduce."""
    import torch

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            intel = "GenuineIntel" in info.read(4096)
    except OSError:
        intel = False
    return intel and torch.backends.mkl.is_available()


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


def graph_structure(L: Any, fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> tuple[dict[str, int], int, bool]:
    """What one forward records on library L: its node classes (how many of each, leaves'
    AccumulateGrad left out), the tensors it saves (counted by `saved_tensors_hooks`), and
    whether a second backward through it fails (PyTorch's rule: it saved something)."""
    ts = [L.tensor(a, requires_grad=True) for a in arrays]
    packed: list[int] = []
    with L.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        y = fn(L, *ts)
    counts: dict[str, int] = {}
    queue, seen = [y.grad_fn], set()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__name__ != "AccumulateGrad":
            counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
        queue.extend(n for n, _ in node.next_functions)
    loss = y.sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as exc:
        if "second time" not in str(exc):
            raise
        return counts, len(packed), True
    return counts, len(packed), False


def assert_same_graph(engine: Any, torch: Any, fn: Callable[..., Any], shapes: Sequence[tuple],
                      seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    assert graph_structure(engine, fn, arrays) == graph_structure(torch, fn, arrays)


def raised(thunk: Callable[[], Any]) -> str:
    """The text of the RuntimeError `thunk` raises, or "ok": how tests compare a second
    backward (or any refused call) with PyTorch's."""
    try:
        thunk()
    except RuntimeError as exc:
        return str(exc)
    return "ok"
