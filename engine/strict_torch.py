"""burn's strict tape checked over real PyTorch (`--backend torch --semantics strict`).

PyTorch frees only saved tensors; burn's tape consumes every non-leaf step a
backward walks, and `retain_graph` does not protect it (semantics.md §2). This
tracker gives a PyTorch program burn's rule without changing what PyTorch
computes:

* ids: a `TorchFunctionMode` numbers every tensor a torch function returns, in
  creation order, leaves included (burn's `NodeId`s), and writes the number and
  the creating line of the program into the output's `grad_fn.metadata` (the
  dict PyTorch keeps on each node, so nothing here keeps a graph alive);
* walks: `torch.autograd.backward` (which `Tensor.backward` calls) and
  `torch.autograd.grad` first collect the nodes reachable from their roots
  through `next_functions`; a node an earlier walk consumed aborts the call
  with burn's message, consuming nothing; otherwise every reached node is
  marked consumed and PyTorch's own backward runs.

Nodes PyTorch creates inside one function (linear's `TBackward0`) carry no id
of their own; a consumed one is reported under the id of the output that
reached it. burn's pruning of unreachable records (which changes the id a
report names once no handle holds the shared node, never whether it fails) is
not modelled: the first consumed node reached is named.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import Any

from . import errors

ID, LINE, LINES, CONSUMED = "tapelint_node_id", "tapelint_line", "tapelint_lines", "tapelint_consumed"


def _user_lines(path: str) -> tuple[int, ...]:
    """The program's own frames on the current stack, innermost first."""
    frame: FrameType | None = sys._getframe(1)
    lines: list[int] = []
    while frame is not None:
        if frame.f_code.co_filename == path:
            lines.append(frame.f_lineno)
        frame = frame.f_back
    return tuple(lines)


def _tensors(value: Any) -> Iterator[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)


def _nodes(roots: Sequence[Any]) -> list[tuple[Any, int | None]]:
    """Non-leaf nodes reachable from `roots`, breadth first, each with the id it is
    reported under (its own, else that of the node that reached it)."""
    seen: set[int] = set()
    order: list[tuple[Any, int | None]] = []
    queue: deque[tuple[Any, int | None]] = deque((r, None) for r in roots)
    while queue:
        node, owner = queue.popleft()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        nid = node.metadata.get(ID, owner)
        order.append((node, nid))
        queue.extend((n, nid) for n, _ in node.next_functions)
    return order


class Tracker:
    """Ids at creation, validation then consumption at every backward."""

    def __init__(self, path: str) -> None:
        import torch
        from torch.overrides import TorchFunctionMode

        self.path = path
        self.next_id = 0
        self.walking = False
        tracker = self

        class _Ids(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                if getattr(func, "__name__", "") != "__get__":  # reading `.grad` creates nothing
                    tracker.number(out, args)
                return out

        self.mode = _Ids()
        self.torch = torch

    def number(self, out: Any, args: Any) -> None:
        """Give each new tensor the next id; an in-place op's result is its input again,
        new only when the op recorded a node."""
        inputs = {id(t) for t in _tensors(args)}
        for t in _tensors(out):
            node = t.grad_fn
            fresh_node = node is not None and ID not in node.metadata
            if id(t) in inputs and not fresh_node:
                continue
            nid = self.next_id
            self.next_id += 1
            if fresh_node:
                lines = _user_lines(self.path)
                node.metadata.update({ID: nid, LINE: lines[0] if lines else None, LINES: lines})

    def walk(self, roots: Any) -> None:
        """burn's validation, then consumption, of everything `roots` reach."""
        nodes = _nodes([t.grad_fn for t in _tensors(roots)])
        calls = _user_lines(self.path)
        line = next(iter(calls), None)
        for node, nid in nodes:
            if CONSUMED in node.metadata:
                meta = node.metadata
                raise errors.TapeConsumedError(
                    errors.TAPE_CONSUMED.format(node_id=nid), node_id=nid, node_line=meta.get(LINE),
                    consumed_line=meta[CONSUMED], line=line, node_lines=tuple(meta.get(LINES, ())),
                    stack=calls[::-1])
        for node, _ in nodes:
            node.metadata[CONSUMED] = line

    def guarded(self, real: Callable[..., Any], roots: str) -> Callable[..., Any]:
        """`real` walking burn's tape first. PyTorch's function re-enters itself through
        the torch-function mode (`handle_torch_function`): that inner call passes."""
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.walking:
                return real(*args, **kwargs)
            self.walk(args[0] if args else kwargs.get(roots))
            self.walking = True
            try:
                return real(*args, **kwargs)
            finally:
                self.walking = False
        call.__doc__, call.__name__ = real.__doc__, real.__name__
        return call

    def __enter__(self) -> Tracker:
        autograd: Any = self.torch.autograd  # its functions are replaced, which its stubs do not allow
        self.real = autograd.backward, autograd.grad
        autograd.backward = self.guarded(autograd.backward, "tensors")
        autograd.grad = self.guarded(autograd.grad, "outputs")
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(None, None, None)
        autograd: Any = self.torch.autograd
        autograd.backward, autograd.grad = self.real


def tracking(path: str, strict: bool) -> Any:
    """Burn's strict tape over the program at `path` while the block runs (or nothing)."""
    import contextlib

    return Tracker(path) if strict else contextlib.nullcontext()
