"""PyTorch dtypes over numpy dtypes, and PyTorch's type-promotion rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    np: np.dtype
    type_name: str  # legacy tensor type, as PyTorch prints it in errors

    @property
    def is_floating_point(self) -> bool:
        return self.np.kind == "f"

    @property
    def itemsize(self) -> int:
        return self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


float16 = DType("float16", np.dtype(np.float16), "HalfTensor")
float32 = DType("float32", np.dtype(np.float32), "FloatTensor")
float64 = DType("float64", np.dtype(np.float64), "DoubleTensor")
uint8 = DType("uint8", np.dtype(np.uint8), "ByteTensor")
int8 = DType("int8", np.dtype(np.int8), "CharTensor")
int16 = DType("int16", np.dtype(np.int16), "ShortTensor")
int32 = DType("int32", np.dtype(np.int32), "IntTensor")
int64 = DType("int64", np.dtype(np.int64), "LongTensor")
bool_ = DType("bool", np.dtype(np.bool_), "BoolTensor")

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool_)
_BY_NP = {d.np: d for d in ALL}
DEFAULT_FLOAT = float32


def from_np(dtype: np.dtype) -> DType:
    return _BY_NP[np.dtype(dtype)]


@overload
def as_np(dtype: None) -> None: ...


@overload
def as_np(dtype: DType | np.dtype | type | str) -> np.dtype: ...


def as_np(dtype: DType | np.dtype | type | str | None) -> np.dtype | None:
    """Accept a facade dtype, numpy dtype or Python type (`float`, `int`, `bool`)."""
    if dtype is None:
        return None
    if isinstance(dtype, DType):
        return dtype.np
    if dtype is float:
        return DEFAULT_FLOAT.np
    if dtype is int:
        return int64.np
    if dtype is bool:
        return bool_.np
    return np.dtype(dtype)


def _category(dt: np.dtype) -> int:
    return {"b": 0, "u": 1, "i": 1, "f": 2}[dt.kind]


def infer(value: object) -> np.dtype:
    """dtype PyTorch gives `torch.tensor(value)` for Python data."""
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return DEFAULT_FLOAT.np
    if arr.dtype.kind in "iu":
        return int64.np
    if arr.dtype.kind == "b":
        return bool_.np
    raise TypeError(f"cannot make a tensor of {type(value).__name__}")


def promote(operands: list[tuple[np.dtype, int]]) -> np.dtype:
    """PyTorch's result type. Each operand is (dtype, priority): 2 for a tensor
    with dimensions, 1 for a 0-dim tensor, 0 for a Python scalar; the highest
    category wins, and within it only the highest priority decides."""
    top = max(_category(dt) for dt, _ in operands)
    best = max(p for dt, p in operands if _category(dt) == top)
    chosen = [dt for dt, p in operands if _category(dt) == top and p == best]
    if best == 0:  # only Python scalars of the winning category
        return {0: bool_.np, 1: int64.np, 2: DEFAULT_FLOAT.np}[top]
    result = chosen[0]
    for dt in chosen[1:]:
        result = np.promote_types(result, dt)
    return result
