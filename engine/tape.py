"""The tape: tensors, graph nodes, and one backward walk for both semantics.

A tracked non-leaf tensor points at its `Node`; a node points at its inputs'
nodes (or at leaf tensors, which receive `.grad`) and holds what its backward
saved. Nodes never point back at tensor handles strongly, so Python's own
reference counting answers "does a live handle still hold this node?" — the
question strict semantics' prune rule asks.

`torch` semantics: a walk frees the saved tensors of every node it runs; a
later walk through a node that had saved tensors raises PyTorch's error.
`strict` semantics: a walk first validates that every reachable step is still
on the tape, then consumes all of them; after each walk the tape is pruned.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import dtypes, errors
from .source import user_line, user_lines

SEMANTICS = ("torch", "strict")


@dataclass
class State:
    """Process-wide tape state (one program runs per process, as in burn)."""

    semantics: str = "torch"
    grad_enabled: bool = True
    inference: bool = False
    next_id: int = 0
    ids: bool = True  # False while a backward computes plain (unrecorded) gradients
    generation: int = 0
    live_nodes: int = 0
    saved_bytes: int = 0
    store: dict[int, Node] = field(default_factory=dict)  # strict: the tape's records
    saved_hooks: list = field(default_factory=list)  # (pack, unpack) of saved_tensors_hooks, innermost last


STATE = State()


def reset(semantics: str = "torch") -> None:
    """Start a fresh process-like tape (ids from 0); used by the runner and tests."""
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r}")
    generation = STATE.generation + 1
    STATE.__init__(semantics=semantics, generation=generation)  # type: ignore[misc]


def live_nodes() -> int:
    """Graph nodes currently alive: tape records (strict) or reachable nodes (torch)."""
    return len(STATE.store) if STATE.semantics == "strict" else STATE.live_nodes


def saved_bytes() -> int:
    """Bytes of saved tensors currently held by graph nodes."""
    return STATE.saved_bytes


# --------------------------------------------------------------------------- ops


@dataclass(frozen=True)
class Op:
    """One differentiable operation, declared once.

    `forward(*arrays, **attrs)` returns the output array, or `(output, extras)`
    where `extras` are intermediate arrays the backward needs (masks, indices), or
    non-differentiable tensors saved with their version (batch norm's running stats).
    `saves` names what the node keeps: input positions, "out", or extra names;
    a callable receives which inputs need a gradient (PyTorch saves only what
    those gradients use). `backward(ctx, grad)` returns one gradient (or None)
    per input, written with tensor ops so that `create_graph` records it.
    """

    name: str  # PyTorch's forward name, as its in-place error prints it ("Exp")
    forward: Callable[..., Any]
    backward: Callable[[Ctx, Tensor], tuple[Tensor | None, ...]]
    saves: Union[tuple, Callable[[tuple[bool, ...]], tuple]] = ()
    shown_transposed: tuple = ()  # inputs PyTorch saves as a `.t()` view (what its errors print)
    lazy_saved: bool = False  # freed saved tensors fail when read (custom Functions), not up front
    node: str = ""  # PyTorch's node class when it is not f"{name}Backward0" (`SumBackward1`)

    def slots(self, needs: tuple[bool, ...]) -> tuple:
        return self.saves(needs) if callable(self.saves) else self.saves

    def node_name(self) -> str:
        return self.node or f"{self.name}Backward0"


_NAMED: dict[tuple[int, str], Op] = {}


def named(op: Op, node: str) -> Op:
    """`op` recorded under another of PyTorch's node classes (one overload of an
    op family: `sum(dim=1)` is `SumBackward1`, `x.t()` is `TBackward0`)."""
    key = (id(op), node)
    variant = _NAMED.get(key)
    if variant is None:
        variant = _NAMED[key] = dataclasses.replace(op, node=node)
    return variant


Edge = Union["Node", "Tensor", None]  # a parent node, a leaf that gets .grad, or nothing


class SavedTensor:
    """A tensor a node saved, with the version it had then (PyTorch's check).

    `source` is a weak reference to the saved handle: PyTorch names the tensor's
    grad_fn as it is when the check fails (after `y.add_(1)`, "output 0 of Add";
    a view whose storage changed, "output 0 of AsStrided")."""

    __slots__ = ("arr", "edge", "nr", "is_output", "counter", "version", "origin", "source", "transposed",
                 "packed", "unpack_hook")

    def __init__(self, data: np.ndarray, edge: Edge, counter: list | None, origin: str,
                 is_output: bool = False, source: Tensor | None = None,
                 transposed: bool = False, nr: int = 0) -> None:
        self.transposed = transposed
        self.nr = nr  # which output of `edge` the tensor was (a piece of a split)
        self.packed: Any = None
        self.unpack_hook: Callable[[Any], Any] | None = None
        self.arr = data
        self.edge = edge
        self.is_output = is_output
        self.counter = counter
        self.version = counter[0] if counter is not None else 0
        self.origin = origin
        self.source = weakref.ref(source) if source is not None else None

    def _origin_now(self) -> str:
        t = self.source() if self.source is not None else None
        return self.origin if t is None or t._base is not None else _origin(t)

    def unpack(self, node: Node, line: int | None = None) -> Tensor:
        if self.counter is not None and self.counter[0] != self.version:
            shape = list(self.arr.shape)[::-1] if self.transposed else list(self.arr.shape)
            desc = f"torch.{dtypes.from_np(self.arr.dtype).type_name} {shape}"
            raise errors.InplaceModifiedError(
                errors.INPLACE.format(tensor=desc, origin=self._origin_now(),
                                      version=self.counter[0], expected=self.version),
                node_id=node.id, node_line=node.line, modified_line=self.counter[1], line=line,
                node_lines=node.lines)
        if self.unpack_hook is not None:  # saved_tensors_hooks: the tensor comes from unpack
            self.arr = _hooked_array(self.unpack_hook(self.packed), self.transposed)
            self.unpack_hook, self.packed = None, None
        if self.is_output:
            return Tensor(self.arr, node=node, tid=node.id, output_nr=self.nr)
        edge = self.edge
        if isinstance(edge, Tensor) and edge.arr is self.arr:
            return edge
        if isinstance(edge, Node):
            return Tensor(self.arr, node=edge, tid=edge.id, output_nr=self.nr)
        return Tensor(self.arr, tid=-1)


class Ctx:
    """What a backward sees: its saved tensors (unpacked), attributes, input shapes."""

    __slots__ = ("saved", "attrs", "shapes", "dtypes", "needs", "freed")

    def __init__(self, saved: dict, attrs: dict, shapes: tuple, dts: tuple, needs: tuple,
                 freed: Callable[[], Exception] | None = None) -> None:
        self.freed = freed  # for lazy_saved ops: the error reading freed saved tensors raises
        self.saved = saved
        self.attrs = attrs
        self.shapes = shapes
        self.dtypes = dts
        self.needs = needs


class Node:
    """A recorded operation: its step (backward + saved tensors) and its record."""

    __slots__ = ("id", "op", "inputs", "input_nrs", "needs", "saved", "attrs", "shapes", "dtypes", "line",
                 "lines", "saves_any", "nbytes", "released", "released_line", "out_ref", "out_refs",
                 "generation", "hooks", "__weakref__")

    def __init__(self, nid: int, op: Op, inputs: tuple[Edge, ...], needs: tuple[bool, ...],
                 saved: dict, attrs: dict, shapes: tuple, dts: tuple,
                 input_nrs: tuple[int, ...] | None = None) -> None:
        self.id = nid
        self.op = op
        self.inputs = inputs
        self.input_nrs = input_nrs or (0,) * len(inputs)  # which output of each parent node
        self.needs = needs
        self.saved: dict | None = saved
        self.attrs = attrs
        self.shapes = shapes
        self.dtypes = dts
        self.lines = user_lines()
        self.line = self.lines[0] if self.lines else None
        self.saves_any = bool(saved)
        self.nbytes = sum(s.arr.nbytes for s in saved.values())
        self.released = False  # torch: saved tensors freed; strict: step consumed
        self.released_line: int | None = None
        self.out_ref: Callable[[], Tensor | None] = _dead
        self.out_refs: tuple = ()  # a node with several outputs (split): one weak reference each
        self.hooks: dict[int, Hooks] | None = None  # `register_hook` on an output, by output number
        self.generation = STATE.generation
        STATE.live_nodes += 1
        STATE.saved_bytes += self.nbytes
        if STATE.semantics == "strict":
            STATE.store[nid] = self

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object (node {self.id})>"

    @property
    def next_functions(self) -> tuple:
        """PyTorch's edges: a parent node, an `AccumulateGrad` for a leaf, or None."""
        return tuple((AccumulateGrad(e) if isinstance(e, Tensor) else e, nr)
                     for e, nr in zip(self.inputs, self.input_nrs))

    def outputs(self) -> list[Tensor | None]:
        """The live output handles, by output number (None for a dropped one)."""
        refs = self.out_refs or (self.out_ref,)
        return [t if t is not None and t._node is self else None for t in (r() for r in refs)]

    def handle_alive(self) -> bool:
        return any(t is not None for t in self.outputs())

    def release(self, line: int | None) -> None:
        """Drop the saved tensors (torch) or the whole step (strict)."""
        if not self.released:
            self.released = True
            self.released_line = line
        self.saved = None
        if self.generation == STATE.generation:
            STATE.saved_bytes -= self.nbytes
        self.nbytes = 0

    def __del__(self, _state: State = STATE) -> None:
        """`_state` is bound at definition: a node freed at interpreter shutdown, after
        this module's globals are cleared, still finds the tape state."""
        if self.generation == _state.generation:
            _state.live_nodes -= 1
            _state.saved_bytes -= self.nbytes


def _dead() -> None:
    return None


_NODE_CLASSES: dict[str, type] = {}


def node_class(op: Op) -> type:
    """One Node subclass per node class PyTorch names (`MulBackward0`)."""
    name = op.node_name()
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (Node,), {"__slots__": ()})
    return cls


Hook = Callable[["Tensor | None"], Any]
Hooks = dict[int, Hook]  # by handle id, in registration order
_HANDLE_IDS = itertools.count()


class RemovableHandle:
    """What `register_hook` returns (`torch.utils.hooks.RemovableHandle`)."""

    def __init__(self, hooks: Hooks, hook: Hook) -> None:
        self.id = next(_HANDLE_IDS)
        self.hooks_dict = hooks
        hooks[self.id] = hook

    def remove(self) -> None:
        self.hooks_dict.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class AccumulateGrad:
    """The edge to a leaf: where its gradient accumulates into `.grad`."""

    next_functions: tuple = ()

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self) -> int:
        return id(self.variable)


# ------------------------------------------------------------------------ tensor


class Tensor:
    """A numpy array with autograd state. Operators and methods live in `methods`."""

    __array_priority__ = 1000  # numpy scalars defer to our reflected operators
    wrapped_number = False  # a Python number wrapped as an operand (`ops.wrapped_number`)
    _hooks: Hooks | None = None  # a leaf's `register_hook`s (a non-leaf's are on its node)

    if TYPE_CHECKING:  # installed at import by `methods.install()`; declared for type checkers
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __len__(self) -> int: ...
        def item(self) -> Any: ...
        def detach(self) -> Tensor: ...
        def reshape(self, *shape: Any) -> Tensor: ...
        def view(self, *shape: Any) -> Tensor: ...
        def transpose(self, d0: int, d1: int) -> Tensor: ...
        def squeeze(self, dim: Any = None) -> Tensor: ...
        def unsqueeze(self, dim: int) -> Tensor: ...
        def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]: ...
        def unbind(self, dim: int = 0) -> tuple[Tensor, ...]: ...
        def relu_(self) -> Tensor: ...
        def requires_grad_(self, requires_grad: bool = True) -> Tensor: ...
        def sum(self, dim: Any = None, keepdim: bool = False) -> Tensor: ...
        def mean(self, dim: Any = None, keepdim: bool = False) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def log(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def numel(self) -> int: ...
        def size(self, dim: int | None = None) -> Any: ...
        def max(self, dim: Any = None, keepdim: bool = False) -> Any: ...
        def min(self, dim: Any = None, keepdim: bool = False) -> Any: ...
        def dim(self) -> int: ...
        def tolist(self) -> Any: ...
        def expand(self, *shape: Any) -> Tensor: ...
        def contiguous(self) -> Tensor: ...
        def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor: ...
        def permute(self, *dims: Any) -> Tensor: ...
        def softmax(self, dim: int) -> Tensor: ...
        def log_softmax(self, dim: int) -> Tensor: ...
        def masked_fill(self, mask: Any, value: Any) -> Tensor: ...
        def gather(self, dim: int, index: Any) -> Tensor: ...
        def abs(self) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def pow(self, exponent: Any) -> Tensor: ...
        def zero_(self) -> Tensor: ...
        def add_(self, other: Any, alpha: Any = 1) -> Tensor: ...
        def mul_(self, other: Any) -> Tensor: ...
        def copy_(self, other: Any) -> Tensor: ...
        def normal_(self, mean: float = 0.0, std: float = 1.0) -> Tensor: ...
        def uniform_(self, a: float = 0.0, b: float = 1.0) -> Tensor: ...
        shape: Any
        ndim: int
        dtype: Any
        data: Tensor
        T: Tensor

    def __init__(self, data: np.ndarray, *, requires_grad: bool = False, node: Node | None = None,
                 tid: int | None = None, counter: list | None = None,
                 base: Tensor | None = None, output_nr: int = 0) -> None:
        self.arr = data if type(data) is np.ndarray else np.asarray(data)  # reductions give scalars
        self._node = node
        self._nr = output_nr  # which output of `_node` this tensor is
        self._rg = False
        self._grad: Tensor | None = None
        # [version, line of the last in-place change]
        self._counter: list[Any] = counter if counter is not None else [0, None]
        self._base = base
        self._retains = False
        if tid is None:
            if STATE.ids:
                tid = STATE.next_id
                STATE.next_id += 1
            else:
                tid = -1
        self._id = tid
        if requires_grad:
            self.requires_grad = True

    # -- autograd state
    @property
    def requires_grad(self) -> bool:
        return self._node is not None or self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._node is not None:
            if not value:
                raise RuntimeError(errors.REQUIRES_GRAD_NONLEAF)
            return
        if value and self.arr.dtype.kind != "f":
            raise RuntimeError(errors.INT_REQUIRES_GRAD)
        self._rg = bool(value)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self) -> Node | None:
        return self._node

    @property
    def output_nr(self) -> int:
        return self._nr

    @property
    def grad(self) -> Tensor | None:
        if self._node is not None and not self._retains:
            import warnings

            warnings.warn(errors.NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        self._grad = value

    @property
    def _version(self) -> int:
        return self._counter[0]

    def retain_grad(self) -> None:
        if self._node is not None:
            self._retains = True

    @property
    def retains_grad(self) -> bool:
        return self._retains

    def register_hook(self, hook: Hook) -> RemovableHandle:
        """A non-leaf's hooks go on its node, for its output number (PyTorch's tensor
        pre-hooks): after an in-place change they still see the gradient of the old value."""
        if not self.requires_grad:
            raise RuntimeError(errors.HOOK_NO_GRAD)
        if self._node is None:
            hooks = self._hooks = {} if self._hooks is None else self._hooks
        else:
            node_hooks = self._node.hooks = {} if self._node.hooks is None else self._node.hooks
            hooks = node_hooks.setdefault(self._nr, {})
        return RemovableHandle(hooks, hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        run_backward([self], [gradient], retain_graph=retain_graph, create_graph=create_graph,
                     inputs=inputs, accumulate=True)

    def _bump(self) -> None:
        """Record an in-place change: the version counter PyTorch checks."""
        self._counter[0] += 1
        self._counter[1] = user_line()

    __hash__ = object.__hash__


# An optional input left out (layer norm without weight): PyTorch's node keeps an
# empty edge for it and saves nothing in its place. Never written to.
ABSENT = Tensor(np.zeros(0, np.float32), tid=-1)


# ----------------------------------------------------------------------- record


def edge_of(t: Tensor) -> Edge:
    if t._node is not None:
        return t._node
    return t if t._rg else None


def _origin(t: Tensor) -> str:
    return f", which is output 0 of {t._node.op.name}," if t._node is not None else ""


def _saved_origin(t: Tensor, as_view: bool = False) -> str:
    """What PyTorch will name when `t` fails its version check: a tracked view whose
    storage changed is regenerated as AsStrided."""
    view = as_view or t._base is not None
    return ", which is output 0 of AsStrided," if view and t.requires_grad else _origin(t)


def record(op: Op, inputs: Sequence[Tensor], out: Tensor, extras: dict[str, Any],
           attrs: dict[str, Any], fresh: bool = False) -> Tensor:
    """Attach a node for `op` to `out` if grad mode is on and an input is tracked."""
    node = _new_node(op, inputs, out, extras, attrs, fresh)
    if node is not None:
        out._node, out._nr = node, 0
        node.out_ref = weakref.ref(out)
    return out


def record_outputs(op: Op, inputs: Sequence[Tensor], outs: Sequence[Tensor], attrs: dict[str, Any],
                   extras: dict[str, Any] | None = None) -> None:
    """One node for an op with several outputs (PyTorch's `SplitBackward0`): each
    output's grad_fn is that node, told apart by `output_nr`. The backward receives
    one gradient per output, None for an output no loss reached. A slot `("out", n)`
    saves output n (version-checked like any saved output)."""
    node = _new_node(op, inputs, outs[0], extras or {}, attrs, fresh=False, outs=outs)
    if node is None:
        return
    for nr, out in enumerate(outs):
        out._node, out._nr = node, nr
    node.out_refs = tuple(weakref.ref(out) for out in outs)


def _new_node(op: Op, inputs: Sequence[Tensor], out: Tensor, extras: dict[str, Any],
              attrs: dict[str, Any], fresh: bool, outs: Sequence[Tensor] = ()) -> Node | None:
    if not STATE.grad_enabled:
        return None
    needs = tuple(t.requires_grad for t in inputs)
    if not any(needs):
        return None
    saved: dict = {}
    for slot in op.slots(needs):
        if slot == "out":
            saved[slot] = SavedTensor(out.arr, None, out._counter, f", which is output 0 of {op.name},",
                                      is_output=True)
        elif isinstance(slot, tuple):  # ("out", n): output n of a node with several
            o = outs[slot[1]]
            saved[slot] = SavedTensor(o.arr, None, o._counter, f", which is output {slot[1]} of {op.name},",
                                      is_output=True, nr=slot[1])
        elif isinstance(slot, int):
            t = inputs[slot]
            if t is ABSENT:
                continue
            as_view = slot in op.shown_transposed
            saved[slot] = SavedTensor(t.arr, edge_of(t), t._counter if t._id != -1 else None,
                                      _saved_origin(t, as_view), source=None if as_view or t._id == -1
                                      else t, transposed=as_view, nr=t._nr)
        elif isinstance(kept := extras.get(slot), Tensor):  # not differentiated, but version-checked
            saved[slot] = SavedTensor(kept.arr, None, kept._counter, _saved_origin(kept), source=kept)
        elif slot in extras:  # an optional extra (nll_loss's weight) is saved when given
            saved[slot] = SavedTensor(np.asarray(extras[slot]), None, None, "")
    if STATE.saved_hooks:
        _pack(saved, inputs, outs or (out,))
    nid = _fresh_id() if fresh or out._id < 0 else out._id
    return node_class(op)(nid, op, tuple(edge_of(t) if n else None for t, n in zip(inputs, needs)), needs,
                          saved, attrs, tuple(t.arr.shape for t in inputs),
                          tuple(t.arr.dtype for t in inputs), tuple(t._nr for t in inputs))


def _pack(saved: dict, inputs: Sequence[Tensor], outs: Sequence[Tensor]) -> None:
    """Hand each saved tensor to the innermost pack hook, as PyTorch does at save time."""
    pack, unpack = STATE.saved_hooks[-1]
    prev, STATE.grad_enabled = STATE.grad_enabled, False
    try:
        for slot, st in saved.items():
            if slot == "out":
                shown = outs[0]
            elif isinstance(slot, tuple):
                shown = outs[slot[1]]
            elif isinstance(slot, int):
                t = inputs[slot]
                if t.wrapped_number:  # PyTorch packs no wrapped Python number
                    continue
                shown = Tensor(t.arr.T, tid=-1) if st.transposed else t
            else:
                shown = Tensor(st.arr, tid=-1)
            st.packed, st.unpack_hook = pack(shown), unpack
    finally:
        STATE.grad_enabled = prev


def _hooked_array(t: Any, transposed: bool) -> np.ndarray:
    arr = t.arr if isinstance(t, Tensor) else np.asarray(t)
    return arr.T if transposed else arr


def _fresh_id() -> int:
    nid = STATE.next_id
    STATE.next_id += 1
    return nid


def apply(op: Op, *inputs: Tensor, **attrs: Any) -> Tensor:
    """Run `op` forward on tensors and record it."""
    result = op.forward(*(t.arr for t in inputs), **attrs)
    data, extras = result if isinstance(result, tuple) else (result, {})
    return record(op, inputs, Tensor(data), extras, attrs)


def apply_inplace(op: Op, target: Tensor, *others: Tensor, **attrs: Any) -> Tensor:
    """Run `op` and write its result into `target`, rebasing target's history (PyTorch's rule)."""
    tracked = STATE.grad_enabled and (target.requires_grad or any(t.requires_grad for t in others))
    if tracked and target._node is None and target._rg:
        raise RuntimeError(errors.LEAF_INPLACE)
    if tracked and target._base is not None:  # the write joins the base's history (CopySlices)
        from .views import copy_slices  # views builds on ops, which imports this module

        return copy_slices(op, target, others, attrs)
    result = op.forward(target.arr, *(t.arr for t in others), **attrs)
    data, extras = result if isinstance(result, tuple) else (result, {})
    old = Tensor(target.arr.copy() if tracked else target.arr, node=target._node, tid=target._id,
                 output_nr=target._nr)
    old._rg = target._rg
    target.arr[...] = data
    target._bump()
    if tracked:
        target._node = None
        record(op, (old, *others), target, extras, attrs, fresh=True)
    return target


# ----------------------------------------------------------------------- grad mode


class _Internal:
    """Inside a backward: record only when create_graph; internal tensors take no ids."""

    def __init__(self, create_graph: bool) -> None:
        self.create_graph = create_graph

    def __enter__(self) -> None:
        self._prev = (STATE.grad_enabled, STATE.ids)
        STATE.grad_enabled = self.create_graph
        STATE.ids = self.create_graph

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled, STATE.ids = self._prev


# ------------------------------------------------------------------------- walk


def _reachable(roots: Sequence[Node]) -> list[Node]:
    """Nodes reachable from the roots, breadth first (the order a tape validates in)."""
    seen: set[int] = set()
    order: list[Node] = []
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        queue.extend(e for e in node.inputs if isinstance(e, Node))
    return order


Key = tuple[int, int]  # a gradient's destination: (id of the node or leaf, output number)


def _key(t: Tensor) -> Key:
    return id(edge_of(t)), t._nr


def _leading_to(nodes: list[Node], targets: set[Key]) -> set[int]:
    """Ids of the nodes from which some target edge is reachable (PyTorch runs only those)."""
    reaches: set[int] = set()
    for node in sorted(nodes, key=lambda n: n.id):
        if any((id(e), nr) in targets or id(e) in reaches
               for e, nr in zip(node.inputs, node.input_nrs) if e is not None):
            reaches.add(id(node))
    return reaches


def _take(acc: dict[Key, Tensor], node: Node, targets: set[Key]) -> Tensor | tuple | None:
    """The gradient a node runs with (a target's stays for the result); a node with
    several outputs gets one per output, None where none arrived."""
    def take(key: Key) -> Tensor | None:
        return acc.get(key) if key in targets else acc.pop(key, None)
    if not node.out_refs:
        return take((id(node), 0))
    grads = tuple(take((id(node), nr)) for nr in range(len(node.out_refs)))
    return grads if any(g is not None for g in grads) else None


def _reached(acc: dict[Key, Tensor], node: Node) -> bool:
    """Whether a gradient arrived for some output of the node (then it runs)."""
    return any((id(node), nr) in acc for nr in range(len(node.out_refs) or 1))


def _sum_grad(acc: dict[Key, Tensor], key: Key, g: Tensor) -> None:
    prev = acc.get(key)
    acc[key] = g if prev is None else prev + g


def _as_grad(g: Tensor, like: np.ndarray) -> Tensor:
    if g.arr.dtype != like.dtype:
        g = Tensor(g.arr.astype(like.dtype), node=g._node, tid=g._id, output_nr=g._nr)
    return g


def run_backward(roots: Sequence[Tensor], grads: Sequence[Tensor | None], *,
                 retain_graph: bool | None, create_graph: bool,
                 inputs: Sequence[Tensor] | None, accumulate: bool,
                 allow_unused: bool = True) -> list[Tensor | None]:
    """The one walk behind `Tensor.backward`, `autograd.backward` and `autograd.grad`."""
    line = user_line()
    strict = STATE.semantics == "strict"
    retain = bool(create_graph if retain_graph is None else retain_graph) and not strict
    seeds: list[tuple[Tensor, Tensor]] = []
    with _Internal(False):
        for i, (root, g) in enumerate(zip(roots, grads)):
            if not root.requires_grad:
                raise RuntimeError(errors.NO_GRAD_FN.format(index=i))
            if g is None:
                if root.arr.size != 1:
                    raise RuntimeError(errors.NON_SCALAR)
                g = Tensor(np.ones_like(root.arr))
            seeds.append((root, g))
    root_nodes = [r._node for r, _ in seeds if r._node is not None]
    nodes = _reachable(root_nodes)
    if strict:
        for node in nodes:
            if node.released:
                raise errors.TapeConsumedError(
                    errors.TAPE_CONSUMED.format(node_id=node.id), node_id=node.id,
                    node_line=node.line, consumed_line=node.released_line, line=line,
                    node_lines=node.lines)
        for node in nodes:
            node.released, node.released_line = True, line
    targets = list(inputs) if inputs is not None else None
    if targets is not None:
        for t in targets:
            if not t.requires_grad:
                raise RuntimeError(errors.GRAD_INPUT_NO_GRAD)
        target_keys = {_key(t) for t in targets}
        runnable = _leading_to(nodes, target_keys) if not strict else {id(n) for n in nodes}
    else:
        target_keys = set()
        runnable = {id(n) for n in nodes}
    acc: dict[Key, Tensor] = {}
    leaves: dict[int, Tensor] = {}
    for root, g in seeds:
        _sum_grad(acc, _key(root), g)
        if root._node is None:
            leaves[id(root)] = root
    # the nodes an earlier backward freed that this walk reaches: where it re-enters an
    # old graph (a node that saved nothing passes, the first one that saved fails)
    reused = tuple(sorted({n.line for n in nodes if n.released and n.line is not None})) if not strict else ()
    walk = sorted(nodes, key=lambda n: -n.id)
    hooked = runnable | {nid for nid, _ in target_keys}  # a target's hooks run before it is captured
    due = _leaf_hooks_due(walk, runnable, [r for r, _ in seeds], targets is None, target_keys)
    with _Internal(create_graph):
        for leaf in due.pop(-1, ()):
            _run_hooks(leaf._hooks, acc, _key(leaf))
        for node in walk:
            if node.hooks and id(node) in hooked and _reached(acc, node):
                for nr, hooks in node.hooks.items():
                    _run_hooks(hooks, acc, (id(node), nr), several=bool(node.out_refs))
            incoming = _take(acc, node, target_keys)
            if incoming is not None and id(node) in runnable:
                in_grads = _run_node(node, incoming, line, retain, strict, reused)
                for edge, nr, ig in zip(node.inputs, node.input_nrs, in_grads):
                    if edge is None or ig is None:
                        continue
                    _sum_grad(acc, (id(edge), nr), ig)
                    if isinstance(edge, Tensor):
                        leaves[id(edge)] = edge
            for leaf in due.pop(id(node), ()):
                _run_hooks(leaf._hooks, acc, _key(leaf))
        results: list[Tensor | None] = []
        for i, t in enumerate(targets if targets is not None else leaves.values()):
            g = acc.get(_key(t))
            if g is None and not accumulate and not allow_unused:
                raise RuntimeError(errors.GRAD_INPUT_UNUSED.format(index=i))
            grad = None if g is None else _as_grad(g, t.arr)
            results.append(grad)
            if accumulate and grad is not None:
                _accumulate(t, grad, create_graph)
    if strict:
        prune(line)
    return results


def _leaf_hooks_due(walk: list[Node], runnable: set[int], roots: list[Tensor], every: bool,
                    targets: set[Key]) -> dict[int, list[Tensor]]:
    """The hooked leaves whose gradient this walk delivers (all of them, or the targets),
    by the id of the last node walked with an edge to them (-1: a root nothing feeds): then
    their gradient is summed, and PyTorch runs their AccumulateGrad at once."""
    def wanted(t: Tensor) -> bool:
        return bool(t._hooks) and (every or _key(t) in targets)

    last: dict[int, tuple[int, Tensor]] = {id(r): (-1, r) for r in roots if r._node is None and wanted(r)}
    for node in walk:
        if id(node) in runnable:
            for e in node.inputs:
                if isinstance(e, Tensor) and wanted(e):
                    last[id(e)] = (id(node), e)
    due: dict[int, list[Tensor]] = {}
    for at, leaf in last.values():
        due.setdefault(at, []).append(leaf)
    return due


def _run_hooks(hooks: Hooks | None, acc: dict[Key, Tensor], key: Key, several: bool = False) -> None:
    """Call the hooks on a summed gradient in registration order; a returned tensor
    replaces it. An output of a node with several that got no gradient passes None."""
    g = acc.get(key)
    if not hooks or g is None and not several:
        return
    for hook in list(hooks.values()):  # a hook may remove itself
        out = hook(g)
        if out is None:
            continue
        if not isinstance(out, Tensor):
            raise TypeError(errors.HOOK_NOT_TENSOR.format(type=type(out).__name__))
        if g is None:
            raise RuntimeError(errors.HOOK_NONE)
        if out.arr.shape != g.arr.shape:
            raise RuntimeError(errors.HOOK_SIZE.format(name=getattr(hook, "__name__", "<unknown>")))
        g = out
    if g is not None:
        acc[key] = g


def _run_node(node: Node, g: Any, line: int | None, retain: bool,
              strict: bool, reused: tuple[int, ...] = ()) -> tuple[Tensor | None, ...]:
    """Run one node's backward (checks first: freed, then versions), then free it."""
    freed = not strict and node.released and node.saves_any
    if freed and not node.op.lazy_saved:
        raise _second_backward(node, line, reused)
    saved = {slot: s.unpack(node, line) for slot, s in (node.saved or {}).items()}
    for t, gt in zip(node.outputs(), g if node.out_refs else (g,)):
        if t is not None and t._retains and gt is not None:
            _accumulate(t, gt, STATE.grad_enabled)
    ctx = Ctx(saved, node.attrs, node.shapes, node.dtypes, node.needs,
              (lambda: _second_backward(node, user_line(), reused)) if freed else None)
    in_grads = node.op.backward(ctx, g)
    if not retain:
        node.release(line)
    return in_grads


def _second_backward(node: Node, line: int | None, reused: tuple[int, ...] = ()) -> errors.SecondBackwardError:
    return errors.SecondBackwardError(errors.SECOND_BACKWARD, node_id=node.id, node_line=node.line,
                                      consumed_line=node.released_line, line=line,
                                      node_lines=node.lines, reused_lines=reused)


def _accumulate(t: Tensor, g: Tensor, create_graph: bool) -> None:
    """Gradients accumulate into `.grad`; they are never overwritten."""
    if t._grad is None:
        t._grad = g if create_graph else Tensor(np.array(g.arr, dtype=t.arr.dtype, copy=True), tid=-1)
    elif create_graph:
        t._grad = t._grad + g
    else:
        np.add(t._grad.arr, g.arr, out=t._grad.arr, casting="unsafe")
        t._grad._counter[0] += 1


# ------------------------------------------------------------------------ prune


def prune(line: int | None) -> None:
    """Strict semantics' store pruning after a backward (semantics.md §2)."""
    store = STATE.store
    for nid, node in list(store.items()):
        if node.released and not node.handle_alive():
            del store[nid]
            node.release(node.released_line)
    unavailable: set[int] = set()
    for node in sorted(store.values(), key=lambda n: n.id):
        for e in node.inputs:
            if isinstance(e, Node) and (store.get(e.id) is not e or e.id in unavailable):
                unavailable.add(node.id)
                break
    useful: set[int] = set()
    stack = [n for n in store.values() if n.id not in unavailable and n.handle_alive()]
    while stack:
        node = stack.pop()
        if node.id in useful:
            continue
        useful.add(node.id)
        stack.extend(e for e in node.inputs if isinstance(e, Node) and store.get(e.id) is e)
    for nid in [nid for nid in store if nid not in useful]:
        node = store.pop(nid)
        if not node.released:
            node.released_line = line
        node.release(node.released_line)


def iter_nodes(t: Tensor) -> Iterator[Node]:
    """All nodes behind a tensor (for tests and introspection)."""
    return iter(_reachable([t._node] if t._node is not None else []))
