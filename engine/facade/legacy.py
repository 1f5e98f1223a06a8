"""`torch.Tensor` and the typed classes (`torch.FloatTensor`, ...) as a program sees them.

They are not the tape's class: `isinstance`/`issubclass` checks see every engine
tensor (of the class's dtype, for the typed ones), attribute access reaches the
tape's methods (`torch.Tensor.backward`), and a call is PyTorch's legacy
constructor: integers give an (uninitialised, here zero) tensor of that shape,
a sequence gives its data, a tensor is returned as an alias.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes
from ..methods import legacy_new
from ..tape import Tensor as _Tensor


class _TensorType(type):
    """Metaclass of the classes a program names: checks and calls, see the module doc."""

    dtype: dtypes.DType | None

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, _Tensor) and (cls.dtype is None or obj.arr.dtype == cls.dtype.np)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _Tensor)

    def __call__(cls, *args: Any, device: Any = None) -> _Tensor:
        return legacy_new(cls.dtype or dtypes.DEFAULT_FLOAT, args, device)

    def __getattr__(cls, name: str) -> Any:
        return getattr(_Tensor, name)


def _typed(name: str, dt: dtypes.DType | None) -> _TensorType:
    return _TensorType(name, (), {"dtype": dt, "__module__": "torch"})


Tensor = _typed("Tensor", None)
FloatTensor = _typed("FloatTensor", dtypes.float32)
DoubleTensor = _typed("DoubleTensor", dtypes.float64)
HalfTensor = _typed("HalfTensor", dtypes.float16)
LongTensor = _typed("LongTensor", dtypes.int64)
IntTensor = _typed("IntTensor", dtypes.int32)
ShortTensor = _typed("ShortTensor", dtypes.int16)
ByteTensor = _typed("ByteTensor", dtypes.uint8)
BoolTensor = _typed("BoolTensor", dtypes.bool_)
