"""How PyTorch prints a tensor, so that `print(x)` shows the same text on the engine.

PyTorch picks one format for all elements of a tensor: integers with a trailing
dot when every finite float is whole, 4 decimals otherwise, scientific when the
finite magnitudes span more than 1000x, exceed 1e8 or fall below 1e-4; elements
are padded to one width, wrapped at 80 columns, and tensors of more than 1000
elements are summarised to their first and last 3 entries per dim. Suffixes
(`dtype=`, `grad_fn=`, `requires_grad=True`) follow, on a new line when they would
pass the line width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

PRECISION, LINEWIDTH, THRESHOLD, EDGEITEMS = 4, 80, 1000, 3


@dataclass(frozen=True)
class _Format:
    floating: bool
    int_mode: bool
    sci_mode: bool
    width: int

    def __call__(self, value: Any) -> str:
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.width}.{PRECISION}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{PRECISION}f}"
        return " " * (self.width - len(text)) + text


def _choose(values: np.ndarray) -> _Format:
    """One format for every element, from the values shown."""
    flat = values.reshape(-1)
    if flat.dtype.kind != "f":
        return _Format(False, True, False, max([1] + [len(f"{v}") for v in flat.tolist()]))
    finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
    if finite.size == 0:
        return _Format(True, True, False, 1)
    lo, hi = float(np.abs(finite).min()), float(np.abs(finite).max())
    whole = bool(np.all(finite == np.ceil(finite)))
    spread = hi / lo > 1000.0 or hi > 1.0e8
    if whole and not spread:
        return _Format(True, True, False, max(1, *(len(f"{v:.0f}") + 1 for v in finite.tolist())))
    if spread or (not whole and lo < 1.0e-4):
        return _Format(True, whole, True, max(1, *(len(f"{v:.{PRECISION}e}") for v in finite.tolist())))
    return _Format(True, False, False, max(1, *(len(f"{v:.{PRECISION}f}") for v in finite.tolist())))


def _summarised(a: np.ndarray) -> np.ndarray:
    """The entries a summarised print shows (PyTorch sizes its format from these)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        parts = [a[:EDGEITEMS], a[-EDGEITEMS:]]
    else:
        parts = [a]
    if a.ndim == 1:
        return np.concatenate(parts)
    return np.concatenate([np.stack([_summarised(row) for row in p]) for p in parts])


def _vector(a: np.ndarray, indent: int, summarise: bool, fmt: _Format) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
    values = a.tolist()
    if summarise and a.shape[0] > 2 * EDGEITEMS:
        data = [fmt(v) for v in values[:EDGEITEMS]] + [" ..."] + [fmt(v) for v in values[-EDGEITEMS:]]
    else:
        data = [fmt(v) for v in values]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarise: bool, fmt: _Format) -> str:
    if a.ndim == 0:
        return fmt(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarise, fmt)
    rows = range(a.shape[0])
    if summarise and a.shape[0] > 2 * EDGEITEMS:
        parts = [_nested(a[i], indent + 1, summarise, fmt) for i in rows[:EDGEITEMS]] + ["..."] + \
            [_nested(a[i], indent + 1, summarise, fmt) for i in rows[-EDGEITEMS:]]
    else:
        parts = [_nested(a[i], indent + 1, summarise, fmt) for i in rows]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def body(a: np.ndarray, indent: int) -> str:
    """The bracketed values, as `torch._tensor_str._tensor_str` lays them out."""
    if a.size == 0:
        return "[]"
    summarise = a.size > THRESHOLD
    shown = _summarised(a) if summarise else a
    return _nested(a, indent, summarise, _choose(shown))


def with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(parts) + ")"
