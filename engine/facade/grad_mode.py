"""`no_grad`, `enable_grad`, `inference_mode`, `set_grad_enabled`: context managers
and decorators (with or without parentheses, as PyTorch accepts)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..tape import STATE


class _Mode:
    enabled = True
    inference = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs and cls is not set_grad_enabled:
            return cls()(args[0])  # bare decorator: @torch.no_grad
        return super().__new__(cls)

    def __enter__(self) -> _Mode:
        self._prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled, STATE.inference = self.enabled, self.inference
        return self

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled, STATE.inference = self._prev

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self) -> _Mode:
        return type(self)()


class no_grad(_Mode):  # noqa: N801 - PyTorch's names
    enabled = False


class enable_grad(_Mode):  # noqa: N801
    enabled = True


class inference_mode(_Mode):  # noqa: N801
    def __init__(self, mode: bool = True) -> None:
        self.enabled, self.inference = not mode, bool(mode)

    def clone(self) -> _Mode:
        return inference_mode(self.inference)


class set_grad_enabled(_Mode):  # noqa: N801
    """Takes effect when called (a plain function call works too), restored on exit."""

    def __init__(self, mode: bool) -> None:
        self.enabled = bool(mode)
        self._prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled = self.enabled

    def __enter__(self) -> _Mode:
        return self

    def clone(self) -> _Mode:
        return set_grad_enabled(self.enabled)


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference
