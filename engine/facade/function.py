"""`torch.autograd.Function`: a user's forward/backward pair as one node on the tape.

`apply` runs `forward` with grad mode off, then records one node whose backward
calls the user's `backward` (grad mode on only under `create_graph`, as in
PyTorch). What `ctx.save_for_backward` receives becomes the node's saved
tensors, with their version counters: they are freed by a backward like any
saved tensor, so a second backward fails with PyTorch's error where PyTorch
raises it (reading `ctx.saved_tensors` in the user's backward), and an in-place
change after saving fails the version check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import ops
from ..errors import NotSupportedByEngine
from ..tape import STATE, Ctx, Op, Tensor, record


class FunctionCtx:
    """The `ctx` a Function's forward and backward share."""

    def __init__(self, needs: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs
        self.to_save: tuple = ()
        self.materialize_grads = True
        self._saved: list[Tensor | None] | None = None
        self._freed: Callable[[], Exception] | None = None

    def save_for_backward(self, *tensors: Any) -> None:
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._freed is not None:  # PyTorch fails here, inside the user's backward
            raise self._freed()
        if self._saved is None:
            raise RuntimeError("saved_tensors is only available in backward")
        return tuple(self._saved)

    def mark_non_differentiable(self, *tensors: Any) -> None:
        return None

    def mark_dirty(self, *tensors: Any) -> None:
        raise NotSupportedByEngine("torch.autograd.Function ctx.mark_dirty (in-place Functions)")

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


def _slots(ctx: FunctionCtx, inputs: list[Tensor], out: Tensor) -> tuple[tuple, dict]:
    """Each saved tensor as an input position, the output, or an extra array."""
    slots: list[int | str | None] = []
    extras: dict[str, np.ndarray] = {}
    for i, t in enumerate(ctx.to_save):
        if t is None:
            slots.append(None)
        elif t is out:
            slots.append("out")
        elif any(t is x for x in inputs):
            slots.append(next(j for j, x in enumerate(inputs) if x is t))
        else:
            slots.append(f"saved{i}")
            extras[f"saved{i}"] = t.arr
    return tuple(slots), extras


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grads)`; call `apply`."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in positions]
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        prev, STATE.grad_enabled = STATE.grad_enabled, False
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
        if isinstance(out, tuple):
            return _several(cls, ctx, args, positions, inputs, out)
        if not isinstance(out, Tensor):
            return out
        if any(out is x for x in inputs):  # returning an input unchanged: PyTorch makes a view
            out = Tensor(out.arr, counter=out._counter)
        slots, extras = _slots(ctx, inputs, out)
        op = Op(cls.__name__, _unused_forward, _backward_of(cls, ctx, slots, positions, len(args)),
                tuple(s for s in slots if s is not None), lazy_saved=True, node=f"{cls.__name__}Backward")
        return record(op, inputs, out, extras, {})


def _several(cls: type[Any], ctx: FunctionCtx, args: tuple, positions: list[int], inputs: list[Tensor],
             outs: tuple) -> tuple:
    """A Function returning several tensors: one node records them all, flattened into one
    array; each output is a view of its part. The backward hands the user's backward one
    gradient per output (zeros for an output no loss used, as PyTorch materializes them);
    integer outputs are not differentiable and come back as they are."""
    floats = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.arr.dtype.kind == "f"]
    if not floats or not (STATE.grad_enabled and any(t.requires_grad for t in inputs)):
        return outs
    dtype = outs[floats[0]].arr.dtype
    if any(outs[i].arr.dtype != dtype for i in floats):
        raise NotSupportedByEngine("torch.autograd.Function with outputs of different float dtypes")
    parts = [outs[i] for i in floats]
    bounds = np.cumsum([0] + [p.arr.size for p in parts])
    packed = Tensor(np.concatenate([p.arr.ravel() for p in parts]))
    slots, extras = _slots(ctx, inputs, packed)
    user_backward = _backward_of(cls, ctx, slots, positions, len(args))

    def backward(c: Ctx, g: Tensor) -> tuple:
        grads = [ops.reshape(ops.index(g, (slice(int(a), int(b)),)), p.arr.shape)
                 for a, b, p in zip(bounds[:-1], bounds[1:], parts)]
        full: list[Tensor | None] = [None] * len(outs)
        for i, gi in zip(floats, grads):
            full[i] = gi
        return user_backward(c, *full)

    op = Op(cls.__name__, _unused_forward, backward, tuple(s for s in slots if s is not None), lazy_saved=True,
            node=f"{cls.__name__}Backward")
    record(op, inputs, packed, extras, {})
    views = iter(ops.reshape(ops.index(packed, (slice(int(a), int(b)),)), p.arr.shape)
                 for a, b, p in zip(bounds[:-1], bounds[1:], parts))
    return tuple(next(views) if i in floats else o for i, o in enumerate(outs))


def _unused_forward(*arrays: Any) -> Any:
    raise AssertionError("a custom Function's node is recorded after its forward ran")


def _backward_of(cls: type[Any], ctx: FunctionCtx, slots: tuple, positions: list[int],
                 nargs: int) -> Callable[..., tuple]:
    def backward(c: Ctx, *g: Tensor | None) -> tuple:
        ctx._freed = c.freed
        ctx._saved = None if c.freed else [None if s is None else c.saved[s] for s in slots]
        try:
            grads = cls.backward(ctx, *g)
        finally:
            ctx._saved, ctx._freed = None, None
        grads = grads if isinstance(grads, tuple) else (grads,)
        if len(grads) != nargs:
            raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of "
                               f"gradients (expected {nargs}, got {len(grads)})")
        return tuple(grads[i] for i in positions)
    return backward


def once_differentiable(fn: Callable) -> Callable:
    """Accepted: the engine runs a Function's backward as written."""
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        return fn(ctx, *args)
    return wrapper
