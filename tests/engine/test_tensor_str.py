"""`print(tensor)` shows PyTorch's text: the shared element format (whole numbers,
4 decimals, scientific), widths, line wrapping, summarised large tensors, nested
dims and the dtype/grad_fn/requires_grad suffixes."""

from __future__ import annotations

import numpy as np
import pytest

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
V30, M34, C223 = (RNG.standard_normal(s).astype(np.float32) for s in [(30,), (3, 4), (2, 2, 3)])
M4050, V9 = RNG.standard_normal((40, 50)).astype(np.float32), RNG.standard_normal(9).astype(np.float32)

CASES = {
    "whole": lambda L: L.tensor([1.0, 2.0, -3.0]),
    "zeros": lambda L: L.zeros(2, 3),
    "decimals": lambda L: L.tensor([1.0, 2.0, -0.5]),
    "scalar": lambda L: L.tensor(0.123456),
    "scalar_int": lambda L: L.tensor(7),
    "ints": lambda L: L.tensor([[1, -20, 300], [4, 5, 6]]),
    "bools": lambda L: L.tensor([True, False, True]),
    "sci_small": lambda L: L.tensor([1e-5, 0.5, 2.0]),
    "sci_spread": lambda L: L.tensor([0.001, 5.0, 3000.0]),
    "sci_whole": lambda L: L.tensor([1.0, 5000.0]),
    "big_whole": lambda L: L.tensor([1e9, 2e9]),
    "nonfinite": lambda L: L.tensor([float("nan"), float("inf"), -1.5]),
    "nonfinite_whole": lambda L: L.tensor([float("nan"), 2.0]),
    "wrapped": lambda L: L.tensor(V30),
    "matrix": lambda L: L.tensor(M34),
    "cube": lambda L: L.tensor(C223),
    "summarised_vector": lambda L: L.arange(2000.0) / 7,
    "summarised_matrix": lambda L: L.tensor(M4050),
    "summarised_3d": lambda L: L.ones(12, 10, 11),
    "float64": lambda L: L.tensor([0.25, 1.5], dtype=L.float64),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "empty": lambda L: L.tensor([]),
    "empty_2d": lambda L: L.zeros(0, 3),
    "requires_grad": lambda L: L.tensor([1.5, 2.0], requires_grad=True),
    "grad_fn": lambda L: L.tensor([1.5, 2.0], requires_grad=True) * 2,
    "long_suffix": lambda L: (L.tensor(V9, requires_grad=True) * 3).exp(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_like_pytorch(fresh, name: str) -> None:
    want, got = repr(CASES[name](torch)), repr(CASES[name](E))
    assert got == want
    assert str(CASES[name](E)) == str(CASES[name](torch))
