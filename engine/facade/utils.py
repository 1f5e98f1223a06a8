"""`torch.utils`: only `torch.utils.data` is modelled."""

from __future__ import annotations

from typing import Any

from ..errors import NotSupportedByEngine
from . import data  # noqa: F401


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.utils.{name}")
