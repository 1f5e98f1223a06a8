"""`torch.cuda`: there is no GPU on the engine, as scripts that probe it expect."""

from __future__ import annotations

from typing import Any

from ..errors import NotSupportedByEngine


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    return None


def manual_seed_all(seed: int) -> None:
    return None


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.cuda.{name}")
