"""`torch.backends`: the switches programs set, and the one the engine honours.

`torch.backends.mkldnn.flags(enabled=False)` (or `torch.backends.mkldnn.enabled =
False`) makes PyTorch's CPU LSTM build its unfused graph instead of the fused
oneDNN node; `nn.LSTM` reads `mkldnn.enabled`. cuDNN's switches change nothing on
a CPU and are kept so that scripts setting them run.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

from ..errors import NotSupportedByEngine


class _Backend(types.ModuleType):
    """A backend's module: its switches are attributes; anything else is unsupported."""

    def __init__(self, name: str, available: bool, **switches: bool) -> None:
        super().__init__(name)
        self._available = available
        for key, value in switches.items():
            setattr(self, key, value)

    def is_available(self) -> bool:
        return self._available

    @contextlib.contextmanager
    def flags(self, enabled: bool = True, **switches: Any) -> Iterator[None]:
        """PyTorch's flags(): set the switches for the block, restore them after."""
        new = {"enabled": enabled, **switches}
        unknown = [k for k in new if k not in vars(self)]
        if unknown:
            raise NotSupportedByEngine(f"{self.__name__}.flags({unknown[0]}=...)")
        old = {k: getattr(self, k) for k in new}
        for key, value in new.items():
            setattr(self, key, value)
        try:
            yield
        finally:
            for key, value in old.items():
                setattr(self, key, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotSupportedByEngine(f"{self.__name__}.{name}")


mkldnn = _Backend("torch.backends.mkldnn", True, enabled=True, deterministic=False)
cudnn = _Backend("torch.backends.cudnn", False, enabled=True, benchmark=False, deterministic=False,
                 allow_tf32=True)
for _backend in (mkldnn, cudnn):
    sys.modules[f"{__name__}.{_backend.__name__.rsplit('.', 1)[1]}"] = _backend


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.backends.{name}")
