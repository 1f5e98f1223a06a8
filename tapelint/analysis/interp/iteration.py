"""Iterating project objects and data loaders: what a `for` over them binds.

An object of a project class is iterated through its protocol methods, run
on that object at the loop: `__iter__` (a generator: what it yields; `return
self` with a `__next__`: what `__next__` returns; another iterable: its
elements), else `__getitem__` (Python's old sequence protocol). A
`torch.utils.data.DataLoader(dataset, ..., collate_fn=f)` is the container
of its batches, computed where the loader is made: `f` called on a list of
the dataset's samples (what its `__getitem__` returns, or a list's or a
tensor's elements), or, without `collate_fn`, the samples themselves (the
default collate stacks them, which keeps each sample's history). A `for`
over an index (`range`, the counter of `enumerate`) reads a container's
elements by it: `losses[i]` is another element in each iteration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.model import OPAQUE, ListRef, ObjectRef, SelfRef
from tapelint.analysis.names import bound_and_found
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.syntax import per_analysis

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

DATA_LOADERS = frozenset(("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"))
COLLATE_POSITION = 6  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn)
_INDEX = [(None, frozenset((OPAQUE,)))]  # `dataset[i]`: some index


def iterated(frame: Frame, site: cst.CSTNode, vals: Vals, state: State) -> Vals:
    """`vals` as a `for` over `site` iterates them: each object of a project
    class whose protocol methods say what it produces becomes the container
    of that (one runtime value per iteration, as a list's elements)."""
    if not any(isinstance(v, ObjectRef) for v in vals):
        return vals
    out: set = set()
    for value in vals:
        produced = _object_items(frame, site, value, state) if isinstance(value, ObjectRef) else None
        if produced is None:
            out.add(value)
        else:
            out.add(frame.new_list(site, produced, state))
    return frozenset(out)


def _object_items(frame: Frame, site: cst.CSTNode, obj: ObjectRef, state: State) -> Optional[Vals]:
    from tapelint.analysis.interp.calls import inline

    info = frame.program.class_info(obj.cls)
    if info is None:
        return None
    if "__iter__" in info.methods:
        produced = inline(frame, site, info.methods["__iter__"], [], state, owner=info, share_self=False, obj=obj)
        if obj in produced and "__next__" in info.methods:  # `return self`: an iterator
            return inline(frame, site, info.methods["__next__"], [], state, owner=info, share_self=False, obj=obj)
        return frame.elements(produced - {obj}, state)
    if "__getitem__" in info.methods:
        return inline(frame, site, info.methods["__getitem__"], _INDEX, state, owner=info, share_self=False, obj=obj)
    return None


def data_loader(frame: Frame, call: cst.Call, args: list, state: State) -> Vals:
    """`DataLoader(dataset, batch_size, collate_fn=f)`: the container of its batches."""
    from tapelint.analysis.interp.calls import call_values

    samples = _samples(frame, call, argument_values(args, 0, "dataset"), state)
    collate = argument_values(args, COLLATE_POSITION, "collate_fn")
    if collate and call.args:
        # the list of samples one batch is collated from: its own container (at the dataset argument)
        drawn = frame.new_list(call.args[0].value, samples, state)
        batches = call_values(frame, call, call.func, collate, [(None, frozenset((drawn,)))], state)
    else:
        batches = samples
    return frozenset((frame.new_list(call, batches, state),))


def _samples(frame: Frame, call: cst.Call, dataset: Vals, state: State) -> Vals:
    """What indexing or iterating the dataset gives: a project dataset's
    `__getitem__` (its `__iter__` for an iterable dataset), run on it here."""
    from tapelint.analysis.interp.calls import inline

    out: set = set()
    for value in dataset:
        if isinstance(value, SelfRef) and frame.owner is not None:
            own = frame.owner.methods.get("__getitem__")
            if own is not None:  # `DataLoader(self, ...)` in a method of the dataset
                out |= inline(frame, call, own, _INDEX, state, owner=frame.owner)
        elif isinstance(value, ObjectRef):
            items = _object_items(frame, call, value, state)
            out |= items if items is not None else EMPTY
        else:
            out |= frame.elements(frozenset((value,)), state)
    return frozenset(out)


def argument_values(args: list, index: int, keyword: str) -> Vals:
    """The values of a call's argument at position `index` or named `keyword` (none: nothing)."""
    positional = [vals for name, vals in args if name is None]
    if index < len(positional):
        return positional[index]
    return next((vals for name, vals in args if name == keyword), EMPTY)


def indexed_elements(frame: Frame, loop: cst.For, state: State) -> Vals:
    """The elements of containers that `loop` reads by its index (`for i in
    range(n): loss = losses[i]`, `for i, x in enumerate(xs): ys[i]`), the
    index never rebound in the body: like the elements a `for` over the
    container binds, a different one in each iteration."""
    index = _loop_index(loop, state)
    if index is None:
        return EMPTY
    out: set = set()
    for container in _read_by_index(loop.body, index):
        for value in frame.eval(container, state):
            if isinstance(value, ListRef):
                out |= state.env.get(value.key, EMPTY)
    return frozenset(out)


@per_analysis
def _read_by_index(body: cst.BaseSuite, index: str) -> tuple[cst.BaseExpression, ...]:
    """The containers (names, attribute paths) `body` subscripts by `index`
    alone; none when the body rebinds `index`."""
    bound, subscripts = bound_and_found(body, cst_nodes.Subscript)
    if index in bound:
        return ()
    return tuple(node.value for node in subscripts
                 if type(node.value) in (cst_nodes.Name, cst_nodes.Attribute) and _subscript_is(node, index))


def _loop_index(loop: cst.For, state: State) -> Optional[str]:
    """The name a `for` over `range(...)`, or the counter of one over
    `enumerate(...)`, binds to each iteration's number (builtins not shadowed)."""
    source = loop.iter
    if type(source) is not cst_nodes.Call or type(source.func) is not cst_nodes.Name or source.func.value in state.env:
        return None
    target = loop.target
    if source.func.value == "range" and type(target) is cst_nodes.Name:
        return target.value
    if source.func.value == "enumerate" and type(target) is cst_nodes.Tuple and target.elements \
            and type(target.elements[0].value) is cst_nodes.Name:
        return target.elements[0].value.value
    return None


def _subscript_is(node: cst.Subscript, index: str) -> bool:
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst_nodes.Index:
        return False
    value = node.slice[0].slice.value
    return type(value) is cst_nodes.Name and value.value == index
