"""Layer operations: convolution, pooling, batch normalisation, declared like `ops`.

Convolution is three bilinear maps: `conv(x, w)`, its adjoint in x
(`conv_t(y, w)`, which is also ConvTranspose) and its adjoint in w
(`conv_w(x, y)`). Each one's backward is written with the other two, so
`create_graph=True` records second-order terms through any of them. All work on
windows of a padded input taken with numpy stride tricks (im2col): loops run
over kernel positions, never over elements. Every helper works on any number of
spatial dims (1-D, 2-D and 3-D layers share them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import ops, resample
from .errors import NotSupportedByEngine
from .ops import const
from .tape import Op, Tensor, apply, named, record


@dataclass(frozen=True)
class Geometry:
    """stride, padding, dilation (one entry per spatial dim) and groups of one convolution or pool."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1


def pair(v: Any, n: int = 2) -> tuple[int, ...]:
    return tuple(int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * n


def sizes(v: Any, n: int = 2) -> tuple[Optional[int], ...]:
    """`pair` for an adaptive pool's output size, where None keeps the input's size."""
    return tuple(None if x is None else int(x) for x in v) if isinstance(v, (tuple, list)) else (int(v),) * n


def _windows(x: np.ndarray, k: tuple[int, ...], geo: Geometry, fill: float = 0.0,
             extra: tuple[int, ...] = ()) -> np.ndarray:
    """(N, C, *out, *k) view of the padded input's receptive fields; `extra` pads the end
    of each dim further (ceil_mode's last windows)."""
    d = len(k)
    extra = extra or (0,) * d
    if any(geo.padding) or any(extra):
        x = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(geo.padding, extra)),
                   constant_values=fill)
    reach = tuple((kk - 1) * dl + 1 for kk, dl in zip(k, geo.dilation))
    win = np.lib.stride_tricks.sliding_window_view(x, reach, axis=tuple(range(2, 2 + d)))
    return win[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in geo.stride)
               + tuple(slice(None, None, dl) for dl in geo.dilation)]


def _unwindow(cols: np.ndarray, shape: tuple, geo: Geometry) -> np.ndarray:
    """Adjoint of `_windows`: sum window entries back into an array of `shape` (N, C, *spatial)."""
    d = len(shape) - 2
    out_sizes, k = cols.shape[2:2 + d], cols.shape[2 + d:]
    padded = tuple(n + 2 * p for n, p in zip(shape[2:], geo.padding))
    out = np.zeros(shape[:2] + padded, cols.dtype)
    for pos in np.ndindex(*k):
        where = tuple(slice(i * dl, i * dl + st * (o - 1) + 1, st)
                      for i, dl, st, o in zip(pos, geo.dilation, geo.stride, out_sizes))
        out[(slice(None), slice(None)) + where] += cols[(Ellipsis,) + pos]
    return out[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(geo.padding, shape[2:]))]


def _grouped(a: np.ndarray, g: int) -> np.ndarray:
    """(N, C, ...) as (N, groups, C // groups, ...)."""
    n, c = a.shape[:2]
    return a.reshape(n, g, c // g, *a.shape[2:])


def _letters(d: int) -> tuple[str, str]:
    """einsum letters for d output positions and d kernel offsets."""
    return "xyz"[:d], "ijk"[:d]


def _conv(x: np.ndarray, w: np.ndarray, geo: Geometry) -> np.ndarray:
    o_, k_ = _letters(x.ndim - 2)
    g, o = geo.groups, w.shape[0]
    cols = _grouped(_windows(x, w.shape[2:], geo), g)
    wg = w.reshape(g, o // g, *w.shape[1:])
    y = np.einsum(f"ngc{o_}{k_},goc{k_}->ngo{o_}", cols, wg, optimize=True)
    return y.reshape(y.shape[0], o, *y.shape[3:]).astype(x.dtype)


def _conv_t(y: np.ndarray, w: np.ndarray, x_shape: tuple, geo: Geometry) -> np.ndarray:
    o_, k_ = _letters(y.ndim - 2)
    g, o = geo.groups, w.shape[0]
    wg = w.reshape(g, o // g, *w.shape[1:])
    cols = np.einsum(f"ngo{o_},goc{k_}->ngc{o_}{k_}", _grouped(y, g), wg, optimize=True)
    cols = cols.reshape(cols.shape[0], -1, *cols.shape[3:])
    return _unwindow(cols, tuple(x_shape), geo).astype(y.dtype)


def _conv_w(x: np.ndarray, y: np.ndarray, w_shape: tuple, geo: Geometry) -> np.ndarray:
    o_, k_ = _letters(x.ndim - 2)
    g = geo.groups
    cols = _grouped(_windows(x, tuple(w_shape[2:]), geo), g)
    w = np.einsum(f"ngo{o_},ngc{o_}{k_}->goc{k_}", _grouped(y, g), cols, optimize=True)
    return w.reshape(w_shape).astype(x.dtype)


def _conv_fwd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *, geo: Geometry,
              spatial: int) -> np.ndarray:
    y = _conv(x, w, geo)
    return y + b.reshape((1, -1) + (1,) * spatial) if b is not None else y


def _conv_bwd(c: Any, g: Tensor) -> tuple:
    geo, sp = c.attrs["geo"], c.attrs["spatial"]
    x, w = c.saved[0], c.saved[1]
    gx = apply(CONV_T, g, w, x_shape=c.shapes[0], geo=geo, spatial=sp) if c.needs[0] else None
    gw = apply(CONV_W, x, g, w_shape=c.shapes[1], geo=geo, spatial=sp) if c.needs[1] else None
    gb = ops.sum(g, (0,) + tuple(range(2, 2 + sp))) if len(c.needs) > 2 and c.needs[2] else None
    return (gx, gw, gb)[:len(c.needs)]


def _conv_t_bwd(c: Any, g: Tensor) -> tuple:
    """y -> conv_t(y, w): adjoint pairs give conv(g, w) for y, conv_w(g, y) for w."""
    geo, sp = c.attrs["geo"], c.attrs["spatial"]
    y, w = c.saved[0], c.saved[1]
    gy = apply(CONV, g, w, geo=geo, spatial=sp) if c.needs[0] else None
    gw = apply(CONV_W, g, y, w_shape=c.shapes[1], geo=geo, spatial=sp) if c.needs[1] else None
    return gy, gw


def _conv_w_bwd(c: Any, g: Tensor) -> tuple:
    geo, sp = c.attrs["geo"], c.attrs["spatial"]
    x, y = c.saved[0], c.saved[1]
    gx = apply(CONV_T, y, g, x_shape=c.shapes[0], geo=geo, spatial=sp) if c.needs[0] else None
    gy = apply(CONV, x, g, geo=geo, spatial=sp) if c.needs[1] else None
    return gx, gy


CONV = Op("Convolution", _conv_fwd, _conv_bwd, (0, 1))
CONV_T = Op("ConvolutionBackward", lambda y, w, x_shape, geo, spatial: _conv_t(y, w, x_shape, geo),
            _conv_t_bwd, (0, 1))
CONV_W = Op("ConvolutionBackward", lambda x, y, w_shape, geo, spatial: _conv_w(x, y, w_shape, geo),
            _conv_w_bwd, (0, 1))


def _conv_transpose_fwd(y: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *,
                        x_shape: tuple, geo: Geometry, spatial: int) -> np.ndarray:
    x = _conv_t(y, w, x_shape, geo)
    return x + b.reshape((1, -1) + (1,) * spatial) if b is not None else x


def _conv_transpose_bwd(c: Any, g: Tensor) -> tuple:
    gy, gw = _conv_t_bwd(c, g)
    gb = ops.sum(g, (0,) + tuple(range(2, 2 + c.attrs["spatial"]))) \
        if len(c.needs) > 2 and c.needs[2] else None
    return (gy, gw, gb)[:len(c.needs)]


CONV_TRANSPOSE = Op("Convolution", _conv_transpose_fwd, _conv_transpose_bwd, (0, 1))


def _padding(padding: Any, kernel: tuple, dilation: tuple, stride: tuple) -> tuple[int, ...]:
    if padding == "valid":
        return (0,) * len(kernel)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        if any(t % 2 for t in totals):
            raise NotSupportedByEngine("padding='same' with an even kernel (asymmetric padding)")
        return tuple(t // 2 for t in totals)
    return pair(padding, len(kernel))


def _geometry(spatial: int, kernel: tuple, stride: Any, padding: Any, dilation: Any,
              groups: int) -> Geometry:
    s, d = pair(stride, spatial), pair(dilation, spatial)
    return Geometry(s, _padding(padding, kernel, d, s), d, groups)


def _batched(x: Tensor, spatial: int) -> tuple[Tensor, bool]:
    if x.arr.ndim == spatial + 1:
        return ops.unsqueeze(x, 0), True
    if x.arr.ndim != spatial + 2:
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input "
                           f"to conv{spatial}d, but got input of size: {list(x.arr.shape)}")
    return x, False


def _unbatched(out: Tensor, squeeze: bool) -> Tensor:
    return ops.reshape(out, out.arr.shape[1:], "SqueezeBackward1") if squeeze else out


def conv(x: Tensor, w: Tensor, b: Tensor | None, stride: Any, padding: Any, dilation: Any,
         groups: int, spatial: int) -> Tensor:
    x, squeeze = _batched(x, spatial)
    x, w = ops.operands(x, w)
    if x.arr.shape[1] != w.arr.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.arr.shape)}, expected input"
                           f"{list(x.arr.shape)} to have {w.arr.shape[1] * groups} channels, but got "
                           f"{x.arr.shape[1]} channels instead")
    geo = _geometry(spatial, w.arr.shape[2:], stride, padding, dilation, groups)
    inputs = (x, w) if b is None else (x, w, b)
    return _unbatched(apply(CONV, *inputs, geo=geo, spatial=spatial), squeeze)


def conv_transpose(x: Tensor, w: Tensor, b: Tensor | None, stride: Any, padding: Any,
                   output_padding: Any, groups: int, dilation: Any, spatial: int) -> Tensor:
    x, squeeze = _batched(x, spatial)
    geo = _geometry(spatial, w.arr.shape[2:], stride, padding, dilation, groups)
    s, p, d = pair(stride, spatial), pair(padding, spatial), pair(dilation, spatial)
    op_ = pair(output_padding, spatial)
    size = tuple((n - 1) * s[i] - 2 * p[i] + d[i] * (w.arr.shape[2 + i] - 1) + op_[i] + 1
                 for i, n in enumerate(x.arr.shape[2:]))
    x_shape = (x.arr.shape[0], w.arr.shape[1] * groups) + size
    inputs = (x, w) if b is None else (x, w, b)
    return _unbatched(apply(CONV_TRANSPOSE, *inputs, x_shape=x_shape, geo=geo, spatial=spatial), squeeze)


# --------------------------------------------------------------------- pooling


def _max_pool_fwd(x: np.ndarray, k: tuple, geo: Geometry, spatial: int, extra: tuple) -> tuple:
    cols = _windows(x, k, geo, fill=-np.inf, extra=extra)
    flat = cols.reshape(*cols.shape[:2 + spatial], -1)
    arg = flat.argmax(-1)
    out = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
    # flat index of each winner in the unpadded input (PyTorch's `indices`)
    offsets = np.unravel_index(arg, k)
    starts = np.indices(out.shape[2:])
    where = tuple(starts[i] * geo.stride[i] - geo.padding[i] + offsets[i] * geo.dilation[i]
                  for i in range(spatial))
    idx = np.ravel_multi_index(where, x.shape[2:], mode="clip")
    return out.astype(x.dtype), {"indices": idx.astype(np.int64)}


def _scatter_pool(g: np.ndarray, idx: np.ndarray, shape: tuple) -> np.ndarray:
    n, c = shape[:2]
    out = np.zeros((n, c, int(np.prod(shape[2:]))), g.dtype)
    np.add.at(out, (np.arange(n)[:, None, None], np.arange(c)[None, :, None], idx.reshape(n, c, -1)),
              g.reshape(n, c, -1))
    return out.reshape(shape)


def _gather_pool(g: Tensor, idx: np.ndarray) -> Tensor:
    """Each window's winner picked from `g` (the adjoint of the scatter), recorded."""
    n, c = g.arr.shape[:2]
    flat = ops.reshape(g, (n, c, -1))
    return ops.reshape(ops.gather(flat, 2, idx.reshape(n, c, -1)), idx.shape)


MAX_POOL = Op("MaxPool2DWithIndices", lambda x, k, geo, spatial, extra: _max_pool_fwd(x, k, geo, spatial, extra),
              lambda c, g: (apply(MAX_POOL_BACKWARD, g, idx=c.saved["indices"].arr, shape=c.shapes[0]),),
              (0, "indices"))
MAX_POOL_BACKWARD: Op = Op("MaxPool2DWithIndicesBackward",
                       lambda g, idx, shape: _scatter_pool(g, idx, shape),
                       lambda c, g: (_gather_pool(g, c.attrs["idx"]),))
MAX_POOL_3D = named(MAX_POOL, "MaxPool3DWithIndicesBackward0")


def _avg_fwd(x: np.ndarray, k: tuple, geo: Geometry, spatial: int) -> np.ndarray:
    return _windows(x, k, geo).mean(axis=tuple(range(-spatial, 0))).astype(x.dtype)


def _avg_bwd_np(g: np.ndarray, shape: tuple, k: tuple, geo: Geometry, spatial: int) -> np.ndarray:
    share = (g / int(np.prod(k)))[(Ellipsis,) + (None,) * spatial]
    cols = np.broadcast_to(share, g.shape + tuple(k))
    return _unwindow(np.ascontiguousarray(cols), shape, geo).astype(g.dtype)


def _pool_op(name: str) -> Op:
    return Op(name, _avg_fwd,
              lambda c, g: (apply(AVG_POOL_BACKWARD, g, shape=c.shapes[0], k=c.attrs["k"],
                                  geo=c.attrs["geo"], spatial=c.attrs["spatial"]),), (0,))


AVG_POOL = _pool_op("AvgPool2D")
ADAPTIVE_AVG_POOL = _pool_op("AdaptiveAvgPool2D")
POOL_NODES_3D = {id(MAX_POOL): MAX_POOL_3D, id(AVG_POOL): named(AVG_POOL, "AvgPool3DBackward0"),
                 id(ADAPTIVE_AVG_POOL): named(ADAPTIVE_AVG_POOL, "AdaptiveAvgPool3DBackward0")}


def _pool(op: Op, spatial: int) -> Op:
    """PyTorch names 3-D pooling nodes apart (`AvgPool3DBackward0`); 1-D pools run its 2-D kernels."""
    return POOL_NODES_3D[id(op)] if spatial == 3 else op
AVG_POOL_BACKWARD = Op("AvgPool2DBackward",
                       lambda g, shape, k, geo, spatial: _avg_bwd_np(g, shape, k, geo, spatial),
                       lambda c, g: (apply(AVG_POOL, g, k=c.attrs["k"], geo=c.attrs["geo"],
                                           spatial=c.attrs["spatial"]),))


def _pool_geometry(spatial: int, kernel: Any, stride: Any, padding: Any, dilation: Any,
                   ceil_mode: bool) -> tuple[tuple, Geometry]:
    k = pair(kernel, spatial)
    return k, _geometry(spatial, k, stride if stride not in (None, []) else k, padding, dilation, 1)


def _ceil_extra(size: tuple, k: tuple, geo: Geometry) -> tuple[int, ...]:
    """How far past the input (and its padding) ceil_mode's last windows reach, per dim:
    PyTorch rounds the output size up, but drops a window that would start in the
    right padding."""
    extra = []
    for n, kk, s, p, d in zip(size, k, geo.stride, geo.padding, geo.dilation):
        span = n + 2 * p - d * (kk - 1) - 1
        out = -(-span // s) + 1
        if (out - 1) * s >= n + p:
            out -= 1
        extra.append(max((out - 1) * s - span, 0))
    return tuple(extra)


def _lift(v: Any, height: Any) -> Any:
    """A 1-D pool's size as its 2-D kernel's: (height, v); no stride stays none."""
    return None if v is None or v == [] else (height, sizes(v, 1)[0])


def _in_2d(pool: Any, x: Tensor, *params: Any) -> Any:
    """A 1-D pool as PyTorch runs it: its 2-D kernel on a height-1 input, between an
    unsqueeze and a squeeze (of the indices too, when returned)."""
    out = pool(ops.unsqueeze(x, -2), *params, 2)
    if isinstance(out, tuple):
        values, indices = out
        return _squeezed(values), Tensor(indices.arr.reshape(values.arr.shape[:-2] + values.arr.shape[-1:]))
    return _squeezed(out)


def _squeezed(out: Tensor) -> Tensor:
    return ops.reshape(out, out.arr.shape[:-2] + out.arr.shape[-1:], "SqueezeBackward1")


def max_pool(x: Tensor, kernel: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
             return_indices: bool, spatial: int) -> Any:
    if spatial == 1:
        return _in_2d(max_pool, x, _lift(kernel, 1), _lift(stride, 1), _lift(padding, 0), _lift(dilation, 1),
                      ceil_mode, return_indices)
    x, squeeze = _batched(x, spatial)
    k, geo = _pool_geometry(spatial, kernel, stride, padding, dilation, ceil_mode)
    # ceil_mode's extra windows see -inf beyond the input: they take what they reach of it
    extra = _ceil_extra(x.arr.shape[2:], k, geo) if ceil_mode else (0,) * spatial
    op, attrs = _pool(MAX_POOL, spatial), {"k": k, "geo": geo, "spatial": spatial, "extra": extra}
    values, extras = op.forward(x.arr, **attrs)
    out = _unbatched(record(op, (x,), Tensor(values), extras, attrs), squeeze)
    if not return_indices:
        return out
    # PyTorch's indices: each winner's flat position in its (unpadded) input plane
    indices = extras["indices"]
    return out, Tensor(indices[0] if squeeze else indices)


def avg_pool(x: Tensor, kernel: Any, stride: Any, padding: Any, ceil_mode: bool,
             count_include_pad: bool, divisor_override: Any, spatial: int) -> Tensor:
    if spatial == 1:
        return _in_2d(avg_pool, x, _lift(kernel, 1), _lift(stride, 1), _lift(padding, 0), ceil_mode,
                      count_include_pad, divisor_override)
    x, squeeze = _batched(x, spatial)
    k, geo = _pool_geometry(spatial, kernel, stride, padding, 1, ceil_mode)
    if ceil_mode and any(_ceil_extra(x.arr.shape[2:], k, geo)):
        raise NotSupportedByEngine("avg_pool with ceil_mode=True where it adds a partial window")
    if divisor_override is not None or (not count_include_pad and any(geo.padding)):
        raise NotSupportedByEngine("avg_pool with divisor_override or count_include_pad=False")
    return _unbatched(apply(_pool(AVG_POOL, spatial), x, k=k, geo=geo, spatial=spatial), squeeze)


def adaptive_avg_pool(x: Tensor, output_size: Any, spatial: int) -> Tensor:
    """Output size 1 is a mean (PyTorch lowers it so: nothing saved); sizes that divide
    the input are an average pool; others average overlapping windows (a map per dim)."""
    if spatial == 1:
        return _in_2d(adaptive_avg_pool, x, _lift(output_size, 1))
    x, squeeze = _batched(x, spatial)
    size = x.arr.shape[2:]
    out = tuple(s if o is None else o for o, s in zip(sizes(output_size, spatial), size))
    if all(o == 1 for o in out):
        return _unbatched(ops.mean(x, tuple(range(2, 2 + spatial)), keepdim=True), squeeze)
    if any(s % o for s, o in zip(size, out)):  # overlapping windows of varying size
        return _unbatched(resample.adaptive_avg_pool(x, out, f"AdaptiveAvgPool{spatial}DBackward0"), squeeze)
    k = tuple(s // o for s, o in zip(size, out))
    geo = _geometry(spatial, k, k, 0, 1, 1)
    return _unbatched(apply(_pool(ADAPTIVE_AVG_POOL, spatial), x, k=k, geo=geo, spatial=spatial), squeeze)


# ---------------------------------------------------------------- batch norm


def _bn_axes(x: np.ndarray) -> tuple[int, ...]:
    return (0,) + tuple(range(2, x.ndim))


def _bn_shape(x: np.ndarray) -> tuple[int, ...]:
    return (1, -1) + (1,) * (x.ndim - 2)


def _bn_fwd(x: np.ndarray, w: np.ndarray | None = None, b: np.ndarray | None = None, *,
            mean: np.ndarray, invstd: np.ndarray, training: bool, affine: bool,
            running: tuple[Tensor | None, Tensor | None]) -> tuple:
    shape = _bn_shape(x)
    out = (x - mean.reshape(shape)) * invstd.reshape(shape)
    if w is not None:
        out = out * w.reshape(shape)
    if b is not None:
        out = out + b.reshape(shape)
    # PyTorch's node keeps the running buffers it was given (version-checked) and the batch
    # statistics, empty in eval
    stats = (mean, invstd) if training else (np.zeros(0, x.dtype), np.zeros(0, x.dtype))
    extras: dict[str, Any] = {"save_mean": stats[0].astype(x.dtype), "save_invstd": stats[1].astype(x.dtype)}
    extras.update({name: t for name, t in zip(("running_mean", "running_var"), running) if t is not None})
    return out.astype(x.dtype), extras


def _bn_bwd(c: Any, g: Tensor) -> tuple:
    """Normalised by batch statistics (training) or by fixed ones (eval); the statistics
    enter as constants, so second-order terms through them are not recorded."""
    x = c.saved[0]
    shape, axes = _bn_shape(x.arr), _bn_axes(x.arr)
    mean = const(c.attrs["mean"].reshape(shape).astype(x.arr.dtype))
    invstd = const(c.attrs["invstd"].reshape(shape).astype(x.arr.dtype))
    has_w = len(c.needs) > 1 and c.attrs["affine"]
    w = ops.reshape(c.saved[1], shape) if has_w else None
    xhat = (x - mean) * invstd
    gw = ops.sum(g * xhat, axes) if has_w and c.needs[1] else None
    gb = ops.sum(g, axes) if len(c.needs) > 2 and c.needs[2] else None
    gx = None
    if c.needs[0]:
        scale = invstd if w is None else invstd * w
        if c.attrs["training"]:
            m = float(np.prod([x.arr.shape[a] for a in axes]))
            gx = (g - ops.sum(g, axes, keepdim=True) / m
                  - xhat * ops.sum(g * xhat, axes, keepdim=True) / m) * scale
        else:
            gx = g * scale
    return (gx, gw, gb)[:len(c.needs)]


_BN_STATS = ("running_mean", "running_var", "save_mean", "save_invstd")
BATCH_NORM = Op("NativeBatchNorm", _bn_fwd, _bn_bwd,
                lambda needs: ((0, 1) if len(needs) > 1 else (0,)) + _BN_STATS)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float,
               eps: float) -> Tensor:
    """Batch statistics in training (running buffers updated in place, the variance
    unbiased), the running ones in eval; PyTorch saves the input, weight, the running
    buffers given and the batch statistics either way."""
    axes = _bn_axes(x.arr)
    if training:
        n = x.arr.size / x.arr.shape[1]
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(x.arr.shape)}")
        mean = x.arr.mean(axes)
        var = x.arr.var(axes)
        if running_mean is not None and running_var is not None:
            m = momentum
            running_mean.arr[...] = (1 - m) * running_mean.arr + m * mean
            # no version bump, as in PyTorch's kernel
            running_var.arr[...] = (1 - m) * running_var.arr + m * var * n / (n - 1)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean.arr, running_var.arr
    invstd = 1.0 / np.sqrt(var + eps)
    inputs = [x] + ([weight] if weight is not None else []) + ([bias] if bias is not None else [])
    if weight is None and bias is not None:
        raise NotSupportedByEngine("batch_norm with a bias but no weight")
    return apply(BATCH_NORM, *inputs, mean=mean.astype(np.float64), invstd=invstd.astype(np.float64),
                 training=training, affine=weight is not None, running=(running_mean, running_var))


# ------------------------------------------------------------ unfold / fold


def _im2col(x: np.ndarray, k: tuple[int, int], geo: Geometry) -> np.ndarray:
    cols = _windows(x, k, geo)  # (N, C, OH, OW, kh, kw)
    n, c, oh, ow = cols.shape[:4]
    return np.ascontiguousarray(cols.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * k[0] * k[1], oh * ow)


def _col2im(cols: np.ndarray, size: tuple[int, int], k: tuple[int, int], geo: Geometry) -> np.ndarray:
    n, ckk, _ = cols.shape
    c = ckk // (k[0] * k[1])
    (ph, pw), (dh, dw), (sh, sw) = geo.padding, geo.dilation, geo.stride
    oh = (size[0] + 2 * ph - dh * (k[0] - 1) - 1) // sh + 1
    ow = (size[1] + 2 * pw - dw * (k[1] - 1) - 1) // sw + 1
    blocks = cols.reshape(n, c, k[0], k[1], oh, ow).transpose(0, 1, 4, 5, 2, 3)
    return _unwindow(np.ascontiguousarray(blocks), (n, c, *size), geo).astype(cols.dtype)


# F.unfold is a linear map whose adjoint is F.fold: each one's backward is the other.
IM2COL: Op = Op("Im2Col", lambda x, k, geo: _im2col(x, k, geo),
                lambda c, g: (apply(COL2IM, g, size=c.shapes[0][2:], k=c.attrs["k"], geo=c.attrs["geo"]),))
COL2IM: Op = Op("Col2Im", lambda cols, size, k, geo: _col2im(cols, size, k, geo),
                lambda c, g: (apply(IM2COL, g, k=c.attrs["k"], geo=c.attrs["geo"]),))


def unfold(x: Tensor, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Tensor:
    if x.arr.ndim != 4:
        raise NotSupportedByEngine(f"torch.nn.functional.unfold of a {x.arr.ndim}-D input")
    k = pair(kernel_size, 2)
    return apply(IM2COL, x, k=k, geo=_geometry(2, k, stride, padding, dilation, 1))


def fold(cols: Tensor, output_size: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Tensor:
    if cols.arr.ndim != 3:
        raise NotSupportedByEngine(f"torch.nn.functional.fold of a {cols.arr.ndim}-D input")
    k = pair(kernel_size, 2)
    size = pair(output_size, 2)
    return apply(COL2IM, cols, size=size, k=k, geo=_geometry(2, k, stride, padding, dilation, 1))
