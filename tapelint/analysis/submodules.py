"""The modules a module holds: what `net.modules()` iterates, what an
optimizer of `net.parameters()` updates, and the layers a Sequential of the
project's modules runs in turn (`ModuleRef.layers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tapelint.analysis.model import ModuleRef

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame


def sequential_layers(module: ModuleRef) -> list[ModuleRef]:
    """The modules a Sequential of user modules holds, nested ones too."""
    out: list[ModuleRef] = []
    stack = [module]
    while stack:
        for vals in stack.pop().layers:
            for value in _in_order(vals):
                if isinstance(value, ModuleRef) and value not in out:
                    out.append(value)
                    stack.append(value)
    return out


def submodules(frame: Frame, module: ModuleRef) -> list[ModuleRef]:
    """The modules `module` holds, in the order they were made: what a user
    class's `__init__` left on `self`, a Sequential's layers, transitively."""
    out: list[ModuleRef] = []
    stack = [module]
    while stack:
        current = stack.pop(0)
        info = frame.user_class(current)
        held = [v for vals in info.state.values() for v in _in_order(vals)] if info is not None else []
        for value in held + sequential_layers(current):
            if isinstance(value, ModuleRef) and value not in out and value != module:
                out.append(value)
                stack.append(value)
    return out


def _in_order(vals: frozenset) -> list:
    """The modules among `vals` in an order that does not change from run to
    run (a set's order follows its elements' identities)."""
    return sorted((v for v in vals if isinstance(v, ModuleRef)), key=lambda m: m.class_name)
