"""In-place changes of a view, as PyTorch records them (`CopySlices`).

`dst[i].copy_(src)` writes into `dst`'s storage, so `dst`'s history must gain the
write: PyTorch gives the base a `CopySlices` node whose edges are the base's old
history and the in-place op's other inputs, and whose backward runs that op's
backward on the slice of the gradient the view covers (the rest of the gradient
goes to the old base unchanged). The view itself becomes `AsStridedBackward0` of
the new base. The view's elements are located in the base by their memory
offsets, so any numpy view (index, slice, transpose, reshape without copy) works.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import errors, ops
from .errors import NotSupportedByEngine
from .tape import Ctx, Op, Tensor, record


def _offsets(a: np.ndarray, start: int) -> np.ndarray:
    """Each element's byte offset from `start`."""
    begin = a.__array_interface__["data"][0]
    off = np.full(a.shape, begin - start, dtype=np.int64)
    for d, (n, stride) in enumerate(zip(a.shape, a.strides)):
        off = off + (np.arange(n, dtype=np.int64) * stride).reshape([-1 if i == d else 1 for i in range(a.ndim)])
    return off


def positions(view: np.ndarray, base: np.ndarray) -> np.ndarray | None:
    """The flat (C-order) index in `base` of every element of `view`, or None when the
    view does not lie in the base's storage or writes one element twice."""
    if not np.shares_memory(view, base):
        return None
    start = base.__array_interface__["data"][0]
    in_base = _offsets(base, start).ravel()
    order = np.argsort(in_base, kind="stable")
    ranked = in_base[order]
    wanted = _offsets(view, start)
    at = np.clip(np.searchsorted(ranked, wanted), 0, max(ranked.size - 1, 0))
    if ranked.size == 0 or not np.array_equal(ranked[at], wanted) or np.unique(wanted).size != wanted.size:
        return None
    return order[at]


def _as_strided_bwd(c: Ctx, g: Tensor) -> tuple:
    shape = c.shapes[0]
    flat = ops.apply(ops.INDEX_BACKWARD, g, shape=(int(np.prod(shape)),), key=c.attrs["at"])
    return (ops.reshape(flat, shape),)


AS_STRIDED = Op("AsStrided", lambda a, at: a.reshape(-1)[at], _as_strided_bwd)


def copy_slices(op: Op, target: Tensor, others: tuple[Tensor, ...], attrs: dict[str, Any]) -> Tensor:
    """Run `op` in place on the view `target` and record the write on its base."""
    base = target._base
    assert base is not None
    if base._node is None and base._rg:
        raise RuntimeError(errors.VIEW_LEAF_INPLACE)
    at = positions(target.arr, base.arr)
    if at is None:
        raise NotSupportedByEngine("in-place modification of a view that is not a plain slice of its base")
    old_view = target.arr.copy()
    result = op.forward(target.arr, *(t.arr for t in others), **attrs)
    data, extras = result if isinstance(result, tuple) else (result, {})
    old_base = Tensor(base.arr.copy(), node=base._node, tid=base._id, output_nr=base._nr)
    old_base._rg = base._rg
    target.arr[...] = data
    target._bump()
    inner_needs = (base.requires_grad, *(t.requires_grad for t in others))
    mapping: dict[Any, Any] = {}
    kept: dict[str, Any] = dict(extras)
    for slot in op.slots(inner_needs):
        if slot == 0:  # the view before the write
            mapping[slot], kept["view_self"] = "view_self", old_view
        elif slot == "out":  # the view after it, version-checked like the base
            mapping[slot] = "view_out"
            kept["view_out"] = Tensor(np.array(data), counter=base._counter, tid=-1)
        else:
            mapping[slot] = slot
    backward = _copy_slices_bwd(op, mapping, attrs, at, target.arr.shape)
    node_op = Op("CopySlices", _recorded_already, backward, tuple(mapping.values()), node="CopySlices")
    record(node_op, (old_base, *others), base, kept, {}, fresh=True)
    saved = base._node.saved if base._node is not None else None
    if saved and "view_out" in saved:  # what PyTorch's version check names
        saved["view_out"].origin = f", which is output 0 of {op.name},"
    target._node = None
    record(AS_STRIDED, (base,), target, {}, {"at": at}, fresh=True)
    return target


def _copy_slices_bwd(op: Op, mapping: dict, attrs: dict, at: np.ndarray, view_shape: tuple) -> Any:
    def backward(c: Ctx, g: Tensor) -> tuple:
        flat = ops.reshape(g, (-1,))
        saved = {slot: c.saved[name] for slot, name in mapping.items() if name in c.saved}
        inner = Ctx(saved, attrs, (view_shape, *c.shapes[1:]), c.dtypes, c.needs)
        grads = op.backward(inner, ops.index(flat, at))
        base_grad = None
        if c.needs[0]:
            fill = grads[0] if grads[0] is not None else 0.0
            base_grad = ops.reshape(ops.index_put(flat, at, fill), c.shapes[0])
        return (base_grad, *grads[1:])
    return backward


def _recorded_already(*arrays: Any) -> Any:
    raise AssertionError("a CopySlices node is recorded after its op ran in place")
