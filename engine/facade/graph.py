"""`torch.autograd.graph`: `saved_tensors_hooks`, what PyTorch offers to see (or move)
every tensor a forward saves for its backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import NotSupportedByEngine
from ..tape import STATE, AccumulateGrad, Node  # noqa: F401 - torch.autograd.graph.Node


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Inside the block, each saved tensor goes through `pack_hook` when saved and its
    packed value through `unpack_hook` when a backward reads it."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self) -> saved_tensors_hooks:
        STATE.saved_hooks.append(self.hooks)
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.saved_hooks.remove(self.hooks)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.autograd.graph.{name}")
