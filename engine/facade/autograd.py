"""`torch.autograd`: backward and grad over the engine's tape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import NotSupportedByEngine
from ..tape import Tensor, run_backward
from . import function, graph  # noqa: F401 - torch.autograd.function, .graph
from .function import Function, once_differentiable  # noqa: F401
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401


def _seq(x: Any) -> list:
    if x is None:
        return []
    return [x] if isinstance(x, Tensor) else list(x)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables: Any = None,
             inputs: Any = None) -> None:
    roots = _seq(tensors)
    grads = _seq(grad_tensors) or [None] * len(roots)
    run_backward(roots, grads, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=_seq(inputs) or None, accumulate=True)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Gradients of outputs w.r.t. inputs; `.grad` is left untouched."""
    roots = _seq(outputs)
    grads = _seq(grad_outputs) or [None] * len(roots)
    targets: Sequence[Tensor] = _seq(inputs)
    result = run_backward(roots, grads, retain_graph=retain_graph, create_graph=create_graph,
                          inputs=targets, accumulate=False,
                          allow_unused=bool(allow_unused or materialize_grads))
    if materialize_grads:
        from .. import ops
        result = [g if g is not None else ops.const(t.arr * 0) for g, t in zip(result, targets)]
    return tuple(result)


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Accepted and ignored: the engine always knows where a node was created."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    return None


def Variable(data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: N802
    """The pre-0.4 wrapper: today it returns the tensor itself."""
    return data.requires_grad_(requires_grad) if requires_grad else data


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.autograd.{name}")
