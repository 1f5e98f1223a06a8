"""The linter's op table (`tapelint/ops.py`) and the engine's ops (`Op.saves`
in `engine/ops.py`) state one fact twice: what an op saves for backward.
Here the op table's own tiny graphs (`op_builders.py`, the programs checked
against real PyTorch in `tests/test_ops_table.py`) run on the facade: for
every entry the facade provides, a second backward fails there exactly when
the op table says TENSORS. Entries outside the facade are counted, and the
count of compared entries may not shrink below what it is today."""

from __future__ import annotations

from collections.abc import Callable

from op_builders import MODULE_CASES, function_builders, module_second_backward_fails, second_backward_fails
from tapelint import ops
from tapelint.ops import Saves
from tapelint_engine import errors, facade, tape
from tapelint_engine.errors import NotSupportedByEngine

# Entries compared (145 functions, 77 module configurations since the 3-D layers,
# nn.Transformer and bicubic/area resampling; the facade has no op for the others):
# it may only grow.
MIN_FUNCTIONS, MIN_MODULES = 145, 77


def _on_the_engine(measure: Callable[[], bool]) -> bool | None:
    """A fresh torch-semantics tape; None when the facade lacks an API."""
    tape.reset("torch")
    errors.RAISED.clear()
    try:
        return measure()
    except NotSupportedByEngine:
        return None
    finally:
        tape.reset("torch")


def test_function_entries_agree_with_the_engine() -> None:
    builders = function_builders(facade, facade.nn.functional)
    compared, disagree = 0, []
    for name, build in sorted(builders.items()):
        fails = _on_the_engine(lambda build=build: second_backward_fails(facade, build))
        if fails is None:
            continue
        compared += 1
        if fails != (ops.FUNCTIONS[name] is Saves.TENSORS):
            disagree.append(f"{name}: ops.py says {ops.FUNCTIONS[name].value}, the engine's fails={fails}")
    assert disagree == []
    assert compared >= MIN_FUNCTIONS, f"only {compared} function entries ran on the engine"


def test_module_entries_agree_with_the_engine() -> None:
    compared, disagree = 0, []
    for case in MODULE_CASES:
        fails = _on_the_engine(lambda case=case: module_second_backward_fails(facade, case))
        if fails is None:
            continue
        compared += 1
        if fails != (case.table_saves() is Saves.TENSORS):
            disagree.append(f"{case.constructor}: ops.py says {case.table_saves().value}, the engine's fails={fails}")
    assert disagree == []
    assert compared >= MIN_MODULES, f"only {compared} module configurations ran on the engine"
