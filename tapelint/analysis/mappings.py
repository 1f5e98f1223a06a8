"""Mappings read and written by literal keys: `out["loss"]` is one slot of
`out`, not any of its values.

A container's elements live in the state under its key (`ListRef.key`):
everything it may hold. A mapping (`{...}`, `dict(...)`, `OrderedDict(...)`)
also keeps, per literal string key, what that key holds (its *slot*), and
what was stored under any other key or by a method (`update`, `setdefault`;
its *rest*). So `out["loss"] = out["loss"].detach()` replaces the loss of
`out` and nothing else, and `out["metrics"]` does not read the loss. The
invariant: a key's slot and the rest hold everything the key may hold at
run time, and the container's elements are the rest and every slot.

Slots are state keys like the elements' (`<list@…>['loss']`, `<list@…>|rest`),
so they join, carry and pass into calls as every binding does; the names of
a container's slots are kept by the node store (they only ever grow).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Optional

from tapelint.analysis.model import ListRef
from tapelint.analysis.state import EMPTY, State, Vals

_REST = "|rest"


def _slot(lst: ListRef, name: str) -> str:
    return f"{lst.key}[{name!r}]"


def create(state: State, lst: ListRef, slots: Mapping[str, Vals], rest: Vals, names: set[str]) -> None:
    """A new mapping: `slots` by literal key, `rest` under any other key.
    `names` are the slots the container ever had (an earlier run's go)."""
    for name in names:
        state.env.pop(_slot(lst, name), None)
    held = set(rest)
    for name, vals in slots.items():
        names.add(name)
        state.env[_slot(lst, name)] = vals
        held |= vals
    state.env[lst.key + _REST] = rest
    state.env[lst.key] = frozenset(held)


def store(state: State, lst: ListRef, name: Optional[str], vals: Vals, strong: bool, names: set[str]) -> None:
    """`d[name] = vals` (`name` None: a key that is no literal string). A
    strong update replaces what the slot held (a weak one, when `d` may be
    one of several mappings, adds to it); the elements are then what the
    rest and the slots hold."""
    if name is None:
        add(state, lst, vals)
        return
    names.add(name)
    slot = _slot(lst, name)
    state.env[slot] = vals if strong else state.env.get(slot, EMPTY) | vals
    state.env[lst.key] = _everything(state, lst, names) if strong else state.env.get(lst.key, EMPTY) | vals


def remove(state: State, lst: ListRef, name: Optional[str], strong: bool, names: set[str]) -> None:
    """`del d[name]`, `d.pop(name)`: the slot holds nothing any more (when
    `d` may be one of several mappings, or the key is no literal string,
    nothing is known to be gone)."""
    if name is None or not strong or name not in names:
        return
    state.env[_slot(lst, name)] = EMPTY
    state.env[lst.key] = _everything(state, lst, names)


def add(state: State, lst: ListRef, vals: Vals) -> None:
    """Values stored under keys the analysis does not know (`d.update(...)`, `d[k] = v`)."""
    state.env[lst.key + _REST] = state.env.get(lst.key + _REST, EMPTY) | vals
    state.env[lst.key] = state.env.get(lst.key, EMPTY) | vals


def read(state: State, lst: ListRef, name: Optional[str]) -> Vals:
    """What `d[name]` may be: the slot and the rest (a key that has no slot
    was never stored by its literal: only the rest may hold it), or for a
    key that is no literal, everything the mapping holds."""
    rest = state.env.get(lst.key + _REST)
    if name is None or rest is None:  # (not made as a mapping here: anything may be under any key)
        return state.env.get(lst.key, EMPTY)
    return state.env.get(_slot(lst, name), EMPTY) | rest


def sole(vals: Vals) -> Optional[ListRef]:
    """The mapping `vals` is, when it is that one value (a copy of it, or a
    `**` spread of it, then keeps its slots), else None."""
    if len(vals) != 1:
        return None
    (value,) = vals
    return value if isinstance(value, ListRef) and value.mapping else None


def contents(state: State, lst: ListRef, names: Iterable[str]) -> tuple[dict[str, Vals], Vals]:
    """What a mapping holds, as `create` takes it (`dict(d)` copies it): its
    slots and its rest."""
    rest = state.env.get(lst.key + _REST)
    if rest is None:  # (not made as a mapping here: all of it is the rest)
        return {}, state.env.get(lst.key, EMPTY)
    return {name: state.env[_slot(lst, name)] for name in names if _slot(lst, name) in state.env}, rest


def clear(state: State, lst: ListRef, names: Iterable[str]) -> None:
    """`d.clear()`: nothing under any key."""
    for name in names:
        state.env.pop(_slot(lst, name), None)
    state.env[lst.key + _REST] = EMPTY
    state.env[lst.key] = EMPTY


def _everything(state: State, lst: ListRef, names: Iterable[str]) -> Vals:
    held = set(state.env.get(lst.key + _REST, EMPTY))
    for name in names:
        held |= state.env.get(_slot(lst, name), EMPTY)
    return frozenset(held)
