"""Padding modes and interpolation: each is a linear map along the spatial dims.

`F.pad(mode="reflect"|"replicate"|"circular")` gathers the input at mirrored,
clamped or wrapped positions (its backward scatters back); `F.interpolate`
in modes nearest/linear/bilinear/trilinear/bicubic, and adaptive average
pooling (which `mode="area"` is), multiply each spatial dim by a fixed matrix.
The backward is the transposed map, an op of its own whose backward is the
forward map again, so `create_graph` records it. As measured on PyTorch
2.13: interpolation nodes save no tensor (a second backward passes), padding
and adaptive pooling nodes save their input (it fails).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import NotSupportedByEngine
from .tape import Op, Tensor, apply, named


def _apply_maps(a: np.ndarray, maps: tuple[np.ndarray, ...]) -> np.ndarray:
    """Multiply the last len(maps) dims of `a` by out x in matrices, one per dim."""
    out = a
    for i, m in enumerate(maps):
        axis = a.ndim - len(maps) + i
        out = np.moveaxis(np.tensordot(out, m, axes=([axis], [1])), -1, axis)
    return out.astype(a.dtype)


def _transposed(maps: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(m.T for m in maps)


LINEAR_MAP: Op = Op("LinearMap", lambda a, maps: _apply_maps(a, maps),
                    lambda c, g: (apply(LINEAR_MAP_T, g, maps=_transposed(c.attrs["maps"])),))
LINEAR_MAP_T: Op = Op("LinearMap", lambda a, maps: _apply_maps(a, maps),
                      lambda c, g: (apply(LINEAR_MAP, g, maps=_transposed(c.attrs["maps"])),))
SAVING_MAP = Op("LinearMap", LINEAR_MAP.forward, LINEAR_MAP.backward, (0,))  # what PyTorch's pads keep


# ------------------------------------------------------------------ padding

_PAD_NODES = {"reflect": "ReflectionPad{n}DBackward0", "replicate": "ReplicationPad{n}DBackward0",
              "circular": "CopySlices"}


def _source(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each padded position along a dim of size n, the input position it copies."""
    pos = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        return pos % n
    period = 2 * (n - 1)
    folded = np.abs(pos) % period if period else np.zeros_like(pos)
    return np.where(folded < n, folded, period - folded)


def pad(x: Tensor, widths: Sequence[int], mode: str) -> Tensor:
    """`F.pad` in a non-constant mode, as a 0/1 linear map per padded dim."""
    if mode not in _PAD_NODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    dims = len(widths) // 2
    shape = x.arr.shape
    maps = []
    for i in range(dims):  # widths run from the last dim backwards
        lo, hi = widths[2 * (dims - 1 - i)], widths[2 * (dims - 1 - i) + 1]
        n = shape[x.arr.ndim - dims + i]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension {x.arr.ndim - dims + i} "
                               f"of input {list(shape)}")
        src = _source(n, lo, hi, mode)
        m = np.zeros((src.size, n), x.arr.dtype)
        m[np.arange(src.size), src] = 1
        maps.append(m)
    node = _PAD_NODES[mode].format(n=dims) if mode != "circular" else "CopySlices"
    return apply(named(SAVING_MAP, node), x, maps=tuple(maps))


# ------------------------------------------------------------- interpolation

_MODES = {"nearest": ("Nearest", 0), "nearest-exact": ("NearestExact", 0), "linear": ("Linear", 1),
          "bilinear": ("Bilinear", 2), "trilinear": ("Trilinear", 3), "bicubic": ("Bicubic", 2), "area": ("", 0)}
_CUBIC_A = -0.75  # PyTorch's bicubic kernel


def adaptive_mean(n_in: int, n_out: int) -> np.ndarray:
    """Adaptive average pooling along one dim: output i averages input
    [floor(i * n_in / n_out), ceil((i + 1) * n_in / n_out))."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def adaptive_avg_pool(x: Tensor, out: Sequence[int], node: str) -> Tensor:
    """Any output size, as a map per spatial dim; PyTorch's node saves the input."""
    maps = tuple(adaptive_mean(i, o).astype(x.arr.dtype) for i, o in zip(x.arr.shape[-len(out):], out))
    return apply(named(SAVING_MAP, node), x, maps=maps)


def _nearest(n_in: int, n_out: int, scale: float, offset: float = 0.0) -> np.ndarray:
    """Output i copies input floor((i + offset) * scale): offset 0 is "nearest",
    0.5 (pixel centres) "nearest-exact"."""
    src = np.minimum(np.floor((np.arange(n_out) + offset) * scale).astype(np.int64), n_in - 1)
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), src] = 1
    return m


def _linear(n_in: int, n_out: int, scale: float, align_corners: bool) -> np.ndarray:
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m


def _cubic(n_in: int, n_out: int, scale: float, align_corners: bool) -> np.ndarray:
    """Cubic convolution (A = -0.75) on four taps, clamped at the borders, from source
    positions that (unlike linear's) are not clamped at 0."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = (dst + 0.5) * scale - 0.5
    base = np.floor(src).astype(np.int64)
    t = src - base
    a = _CUBIC_A

    def near(d: np.ndarray) -> np.ndarray:
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    m = np.zeros((n_out, n_in))
    for offset, weight in zip((-1, 0, 1, 2), (far(t + 1), near(t), near(1 - t), far(2 - t))):
        np.add.at(m, (np.arange(n_out), np.clip(base + offset, 0, n_in - 1)), weight)
    return m


def interpolate(x: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    if mode not in _MODES or antialias:
        raise NotSupportedByEngine(f"torch.nn.functional.interpolate(mode={mode!r}, antialias={antialias})")
    spatial = x.arr.ndim - 2
    if _MODES[mode][1] not in (0, spatial):
        raise ValueError(f"Got {x.arr.ndim}D input, but {mode} mode needs {_MODES[mode][1] + 2}D input")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    sizes_in = x.arr.shape[2:]
    if size is not None:
        sizes_out = (size,) * spatial if isinstance(size, int) else tuple(size)
        scales = [i / o for i, o in zip(sizes_in, sizes_out)]
    else:
        factors = (scale_factor,) * spatial if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        sizes_out = tuple(int(math.floor(i * f)) for i, f in zip(sizes_in, factors))
        scales = [i / o if recompute_scale_factor else 1 / f for i, o, f in zip(sizes_in, sizes_out, factors)]
    if mode == "area":  # PyTorch runs adaptive average pooling to the output size
        from . import nn_ops  # nn_ops pools through this module's maps

        return nn_ops.adaptive_avg_pool(x, sizes_out, spatial)
    maps = tuple(_map(mode, i, o, s, bool(align_corners)).astype(x.arr.dtype)
                 for i, o, s in zip(sizes_in, sizes_out, scales))
    node = f"Upsample{_MODES[mode][0]}{spatial}DBackward0"
    return apply(named(LINEAR_MAP, node), x, maps=maps)


def _map(mode: str, n_in: int, n_out: int, scale: float, align_corners: bool) -> np.ndarray:
    if mode in ("nearest", "nearest-exact"):
        return _nearest(n_in, n_out, scale, 0.5 if mode == "nearest-exact" else 0.0)
    return (_cubic if mode == "bicubic" else _linear)(n_in, n_out, scale, align_corners)
