"""`torch.linalg`: the 2-norms training code uses for logging and clipping."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..errors import NotSupportedByEngine
from ..tape import Tensor


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return ops.norm(x, ord, dim, keepdim)


def norm(x: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return ops.norm(x, 2 if ord is None else ord, dim, keepdim)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.linalg.{name}")
