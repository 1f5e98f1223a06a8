"""PyTorch's fused kernels: losses, layer norm and activations, one node each.

PyTorch records `F.mse_loss(y, t)` as one `MseLossBackward0` node that saves
`y` and `t`, not as sub, pow and mean; a program that inspects its graph (the
depth of an accumulated `total_loss`, `next_functions`, what a forward saves)
sees that. The facade uses these ops under torch semantics. Under strict
semantics it keeps its composites: burn's tape builds these functions from
primitive ops, and its node ids count them.

Backwards are written with tensor ops, so `create_graph=True` records them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import ops, tape
from .tape import ABSENT, Ctx, Op, Tensor, apply, named

REDUCTIONS = ("mean", "sum", "none")


def pytorch_graph() -> bool:
    """True when the facade builds PyTorch's nodes (torch semantics)."""
    return tape.STATE.semantics == "torch"


def _reduced(loss: np.ndarray, reduction: str, dtype: np.dtype) -> np.ndarray:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "none":
        return loss.astype(dtype)
    return np.asarray(np.mean(loss) if reduction == "mean" else np.sum(loss), dtype=dtype)


def _spread(g: Tensor, shape: tuple, reduction: str) -> Tensor:
    """Each element's share of the gradient of a reduced loss."""
    if reduction == "none":
        return g
    g = ops.expand(g, shape)
    return g / float(max(int(np.prod(shape)), 1)) if reduction == "mean" else g


def _both(c: Ctx, gd: Tensor) -> tuple[Tensor | None, Tensor | None]:
    """Gradients of (input, target) for losses of `input - target`."""
    return (ops.sum_to(gd, c.shapes[0]) if c.needs[0] else None,
            ops.sum_to(-gd, c.shapes[1]) if c.needs[1] else None)


def _weighted(t: Tensor, c: Ctx, *names: str) -> Tensor:
    for name in names:
        if name in c.saved:
            t = t * c.saved[name]
    return t


def _extras(**arrays: np.ndarray | None) -> dict[str, np.ndarray]:
    return {k: v for k, v in arrays.items() if v is not None}


def _array(t: Tensor | None) -> np.ndarray | None:
    return None if t is None else t.arr


# ------------------------------------------------------------------ regression


def _mse_bwd(c: Ctx, g: Tensor) -> tuple:
    d = c.saved[0] - c.saved[1]
    return _both(c, _spread(g, d.arr.shape, c.attrs["reduction"]) * d * 2.0)


MSE_LOSS = Op("MseLoss", lambda x, y, reduction: _reduced((x - y) ** 2, reduction, x.dtype),
              _mse_bwd, (0, 1))


def _smooth_fwd(x: np.ndarray, y: np.ndarray, beta: float, huber: bool, reduction: str) -> np.ndarray:
    d = np.abs(x - y)
    if huber:
        loss = np.where(d < beta, 0.5 * d * d, beta * (d - 0.5 * beta))
    else:
        loss = np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduced(loss, reduction, x.dtype)


def _smooth_bwd(c: Ctx, g: Tensor) -> tuple:
    d = c.saved[0] - c.saved[1]
    beta = c.attrs["beta"]
    inside = np.abs(d.arr) < beta
    slope = ops.where(inside, d if c.attrs["huber"] else d * (1.0 / beta),
                      ops.sign(d) * beta if c.attrs["huber"] else ops.sign(d))
    return _both(c, _spread(g, d.arr.shape, c.attrs["reduction"]) * slope)


SMOOTH_L1_LOSS = Op("SmoothL1Loss", _smooth_fwd, _smooth_bwd, (0, 1))
HUBER_LOSS = named(SMOOTH_L1_LOSS, "HuberLossBackward0")


def mse_loss(x: Tensor, y: Tensor, reduction: str) -> Tensor:
    return apply(MSE_LOSS, *ops.operands(x, y), reduction=reduction)


def smooth_l1_loss(x: Tensor, y: Tensor, reduction: str, beta: float, huber: bool = False) -> Tensor:
    return apply(HUBER_LOSS if huber else SMOOTH_L1_LOSS, *ops.operands(x, y), beta=beta, huber=huber,
                 reduction=reduction)


# ---------------------------------------------------------------- classification


def _nll_share(target: np.ndarray, weight: np.ndarray | None, ignore_index: int,
               dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(each element's weight, 0 where ignored; the targets with ignored ones at 0)."""
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    w = np.ones(target.shape, dtype) if weight is None else weight[safe]
    return (w * valid).astype(dtype), safe


def _nll_fwd(logp: np.ndarray, target: np.ndarray, weight: np.ndarray | None, ignore_index: int,
             reduction: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    cdim = 1 if logp.ndim > 1 else 0
    w, safe = _nll_share(target, weight, ignore_index, logp.dtype)
    picked = np.take_along_axis(logp, np.expand_dims(safe, cdim), cdim).squeeze(cdim)
    loss = -picked * w
    total = np.asarray(w.sum(), dtype=logp.dtype)
    if reduction == "mean":
        out = np.asarray(loss.sum() / total, dtype=logp.dtype)
    else:
        out = _reduced(loss, reduction, logp.dtype)
    return out, _extras(target=target, total_weight=total, weight=weight)


def _nll_bwd(c: Ctx, g: Tensor) -> tuple:
    reduction, target, shape = c.attrs["reduction"], c.attrs["target"], c.shapes[0]
    cdim = 1 if len(shape) > 1 else 0
    share, safe = _nll_share(target, c.attrs["weight"], c.attrs["ignore_index"], c.dtypes[0])
    if reduction == "mean":
        share = share / c.saved["total_weight"].arr
    gg = (g if reduction == "none" else ops.expand(g, target.shape)) * ops.const(-share)
    return (apply(ops.SCATTER_ADD, ops.unsqueeze(gg, cdim), shape=shape, dim=cdim,
                  idx=np.expand_dims(safe, cdim)),)


NLL_LOSS = Op("NllLoss", _nll_fwd, _nll_bwd, (0, "target", "total_weight", "weight"))


def nll_loss(logp: Tensor, target: np.ndarray, weight: Tensor | None, ignore_index: int,
             reduction: str) -> Tensor:
    if (logp.arr.ndim == 3 or logp.arr.ndim > 4) and pytorch_graph():
        return _nll_loss_nd(logp, target, weight, ignore_index, reduction)
    op = named(NLL_LOSS, "NllLoss2DBackward0") if logp.arr.ndim == 4 else NLL_LOSS
    return apply(op, logp, target=target.astype(np.int64), weight=_array(weight),
                 ignore_index=ignore_index, reduction=reduction)


def _nll_loss_nd(logp: Tensor, target: np.ndarray, weight: Tensor | None, ignore_index: int,
                 reduction: str) -> Tensor:
    """PyTorch's nll_loss_nd for 3-D and >4-D inputs: the (contiguous) input viewed as
    (N, C, 1, -1), the 2-D loss, and an unreduced result viewed back to the target's shape."""
    n, c = logp.arr.shape[:2]
    flat = logp if logp.arr.flags.c_contiguous else ops.clone(logp)
    out = apply(named(NLL_LOSS, "NllLoss2DBackward0"), ops.reshape(flat, (n, c, 1, -1)),
                target=target.astype(np.int64).reshape(n, 1, -1), weight=_array(weight),
                ignore_index=ignore_index, reduction=reduction)
    return ops.reshape(out, target.shape) if reduction == "none" else out


def _bce_fwd(p: np.ndarray, y: np.ndarray, weight: np.ndarray | None,
             reduction: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    with np.errstate(divide="ignore"):
        log_p, log_q = np.maximum(np.log(p), -100), np.maximum(np.log(1 - p), -100)
    loss = -(y * log_p + (1 - y) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction, p.dtype), _extras(weight=weight)


def _bce_bwd(c: Ctx, g: Tensor) -> tuple:
    p, y = c.saved[0], c.saved[1]
    up = _weighted(_spread(g, p.arr.shape, c.attrs["reduction"]), c, "weight")
    gp = up * (p - y) / ops.clamp((1 - p) * p, min=1e-12) if c.needs[0] else None
    gy = None
    if c.needs[1]:
        log_p, log_q = ops.clamp(ops.log(p), min=-100.0), ops.clamp(ops.log(1 - p), min=-100.0)
        gy = up * (log_q - log_p)
    return gp, gy


BCE = Op("BinaryCrossEntropy", _bce_fwd, _bce_bwd, (0, 1, "weight"))


def _softplus_neg(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(-x)) without overflow."""
    return np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))


def _bce_logits_fwd(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None, pos_weight: np.ndarray | None,
                    reduction: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    scale = 1.0 if pos_weight is None else 1 + (pos_weight - 1) * y64
    loss = (1 - y64) * x64 + scale * _softplus_neg(x64)
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction, x.dtype), _extras(weight=weight, pos_weight=pos_weight)


def _bce_logits_bwd(c: Ctx, g: Tensor) -> tuple:
    x, y = c.saved[0], c.saved[1]
    up = _weighted(_spread(g, x.arr.shape, c.attrs["reduction"]), c, "weight")
    pw = c.saved.get("pos_weight")
    gx = gy = None
    if c.needs[0]:
        if pw is None:
            gx = up * (ops.sigmoid(x) - y)
        else:
            scale = (pw - 1) * y + 1
            gx = up * (scale * ops.sigmoid(x) - scale + 1 - y)
    if c.needs[1]:
        gy = up * (-x if pw is None else -x - (pw - 1) * ops.logsigmoid(x))
    return gx, gy


BCE_WITH_LOGITS = Op("BinaryCrossEntropyWithLogits", _bce_logits_fwd, _bce_logits_bwd,
                     (0, 1, "weight", "pos_weight"))


def binary_cross_entropy(p: Tensor, y: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    return apply(BCE, *ops.operands(p, y), weight=_array(weight), reduction=reduction)


def binary_cross_entropy_with_logits(x: Tensor, y: Tensor, weight: Tensor | None,
                                     pos_weight: Tensor | None, reduction: str) -> Tensor:
    return apply(BCE_WITH_LOGITS, *ops.operands(x, y), weight=_array(weight),
                 pos_weight=_array(pos_weight), reduction=reduction)


# ------------------------------------------------------------------ layer norm


def _stats(x: np.ndarray, k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    dims = tuple(range(x.ndim - k, x.ndim))
    mu = np.mean(x, axis=dims, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=dims, keepdims=True)
    return mu.astype(x.dtype), (1 / np.sqrt(var + eps)).astype(x.dtype)


def _ln_fwd(x: np.ndarray, w: np.ndarray, b: np.ndarray, k: int, eps: float) -> tuple:
    mu, rstd = _stats(x, k, eps)
    out = (x - mu) * rstd
    if w.size:
        out = out * w
    if b.size:
        out = out + b
    return out.astype(x.dtype), {"mean": mu, "rstd": rstd}


def _ln_bwd(c: Ctx, g: Tensor) -> tuple:
    """Recomputes the statistics from the saved input with tensor ops, so that a
    create_graph backward differentiates through them."""
    x, k, eps = c.saved[0], c.attrs["k"], c.attrs["eps"]
    dims = tuple(range(-k, 0))
    centered = x - ops.mean(x, dims, keepdim=True)
    rstd = ops.rsqrt(ops.mean(centered * centered, dims, keepdim=True) + eps)
    xhat = centered * rstd
    gxhat = g * c.saved[1] if 1 in c.saved else g
    gx = gw = gb = None
    if c.needs[0]:
        gx = rstd * (gxhat - ops.mean(gxhat, dims, keepdim=True)
                     - xhat * ops.mean(gxhat * xhat, dims, keepdim=True))
    if c.needs[1]:
        gw = ops.sum_to(g * xhat, c.shapes[1])
    if c.needs[2]:
        gb = ops.sum_to(g, c.shapes[2])
    return gx, gw, gb


LAYER_NORM = Op("NativeLayerNorm", _ln_fwd, _ln_bwd, (0, "mean", "rstd", 1, 2))


def layer_norm(x: Tensor, k: int, weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    return apply(LAYER_NORM, x, ABSENT if weight is None else weight, ABSENT if bias is None else bias,
                 k=k, eps=eps)


# ------------------------------------------------------------------ activations

_SQRT_HALF, _INV_SQRT_2PI, _TANH_K = 1 / math.sqrt(2.0), 1 / math.sqrt(2 * math.pi), math.sqrt(2 / math.pi)


def _in64(fn: Any) -> Any:
    """Evaluate in float64 and round once, as PyTorch's float32 kernels round."""
    def forward(a: np.ndarray, **attrs: Any) -> np.ndarray:
        return np.asarray(fn(a.astype(np.float64), **attrs)).astype(a.dtype)
    return forward


def _gelu(a: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(_TANH_K * (a + 0.044715 * a ** 3)))
    erf = np.vectorize(math.erf, otypes=[np.float64])(a * _SQRT_HALF) if a.size else a
    return 0.5 * a * (1 + erf)


def _gelu_bwd(c: Ctx, g: Tensor) -> Tensor:
    x = c.saved[0]
    if c.attrs["approximate"] == "tanh":
        t = ops.tanh((x + x * x * x * 0.044715) * _TANH_K)
        slope = (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * _TANH_K * (x * x * (3 * 0.044715) + 1)
    else:
        cdf = (ops.erf(x * _SQRT_HALF) + 1) * 0.5
        slope = cdf + x * ops.exp(x * x * -0.5) * _INV_SQRT_2PI
    return g * slope


def _silu_bwd(c: Ctx, g: Tensor) -> Tensor:
    x = c.saved[0]
    s = ops.sigmoid(x)
    return g * s * (x * (1 - s) + 1)


def _softplus(a: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    return np.where(a * beta > threshold, a, (np.maximum(a * beta, 0) + np.log1p(np.exp(-np.abs(a * beta)))) / beta)


def _softplus_bwd(c: Ctx, g: Tensor) -> Tensor:
    x, beta = c.saved[0], c.attrs["beta"]
    return ops.where(x.arr * beta > c.attrs["threshold"], g, g * ops.sigmoid(x * beta))


def _elu_bwd(c: Ctx, g: Tensor) -> Tensor:
    x = c.saved[0]
    return ops.where(x.arr > 0, g, g * ops.exp(x) * c.attrs["alpha"])


def _hardtanh_bwd(c: Ctx, g: Tensor) -> Tensor:
    x = c.saved[0].arr
    inside = (x > c.attrs["lo"]) & (x < c.attrs["hi"])
    return g * ops.const(inside.astype(x.dtype))


def _activation(name: str, forward: Any, backward: Any) -> Op:
    return Op(name, _in64(forward), lambda c, g: (backward(c, g),), (0,))


GELU = _activation("Gelu", _gelu, _gelu_bwd)
SILU = _activation("Silu", lambda a: a / (1 + np.exp(-a)), _silu_bwd)
SOFTPLUS = _activation("Softplus", _softplus, _softplus_bwd)
ELU = _activation("Elu", lambda a, alpha: np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0))), _elu_bwd)
HARDTANH = _activation("Hardtanh", lambda a, lo, hi: np.clip(a, lo, hi), _hardtanh_bwd)


def activation(op: Op, x: Tensor, **attrs: Any) -> Tensor:
    return apply(op, ops._float(x), **attrs)


# PyTorch's cosine_similarity clamps a clone of each norm in place, outside the
# graph: one Clone node, whose gradient passes through unchanged.
CLAMPED_COPY = Op("Clone", lambda a, eps: np.maximum(a, a.dtype.type(eps)), lambda c, g: (g,))


def clamped_copy(t: Tensor, eps: float) -> Tensor:
    return apply(CLAMPED_COPY, t, eps=eps)


# ------------------------------------------------------------------ attention


def _causal(n_q: int, n_k: int, dtype: np.dtype) -> np.ndarray:
    return np.where(np.tril(np.ones((n_q, n_k), bool)), 0.0, -np.inf).astype(dtype)


def _attention_scores(q: np.ndarray, k: np.ndarray, scale: float, mask: np.ndarray | None,
                      causal: bool) -> np.ndarray:
    """scale * q k^T plus the additive mask."""
    s = (q @ k.swapaxes(-2, -1)) * scale
    if causal:
        s = s + _causal(s.shape[-2], s.shape[-1], q.dtype)
    return s if mask is None else s + mask


def _sdpa_fwd(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, mask: np.ndarray | None,
              causal: bool) -> tuple:
    s = _attention_scores(q, k, scale, mask, causal)
    top = np.max(s, axis=-1, keepdims=True)
    lse = top + np.log(np.sum(np.exp(s - top), axis=-1, keepdims=True))
    out = np.empty_like(q, shape=q.shape[:-1] + v.shape[-1:])  # in the query's memory layout, as PyTorch's
    out[...] = np.exp(s - lse) @ v
    return out, _extras(logsumexp=lse[..., 0].astype(q.dtype), attn_mask=mask)


def _sdpa_grads(c: Ctx, g: np.ndarray) -> list[np.ndarray]:
    """PyTorch's flash backward from the saved tensors: the probabilities again from
    the logsumexp, then dq, dk, dv."""
    q, k, v, out, lse = (c.saved[s].arr for s in (0, 1, 2, "out", "logsumexp"))
    mask = c.saved["attn_mask"].arr if "attn_mask" in c.saved else None
    scale = c.attrs["scale"]
    p = np.exp(_attention_scores(q, k, scale, mask, c.attrs["causal"]) - lse[..., None])
    ds = p * (g @ v.swapaxes(-2, -1) - np.sum(g * out, axis=-1, keepdims=True))
    return [((ds @ k) * scale).astype(q.dtype), ((ds.swapaxes(-2, -1) @ q) * scale).astype(q.dtype),
            (p.swapaxes(-2, -1) @ g).astype(q.dtype)]


NOT_DIFFERENTIABLE = "derivative for aten::_scaled_dot_product_flash_attention_for_cpu_backward is not implemented"


def _no_double_backward(c: Ctx, grads: Any) -> tuple:
    raise RuntimeError(NOT_DIFFERENTIABLE)


# Under create_graph the flash backward's gradients come from a node whose own
# backward raises, as PyTorch's (`NotImplemented`, one output per input gradient).
SDPA_BACKWARD = Op("NotImplemented", _sdpa_grads, _no_double_backward, node="NotImplemented")


def _sdpa_bwd(c: Ctx, g: Tensor) -> tuple:
    grads = [Tensor(a) for a in SDPA_BACKWARD.forward(c, g.arr)]
    if tape.STATE.grad_enabled:
        inputs = tuple(c.saved[s] for s in (0, 1, 2, "out")) + ((g,) if g.requires_grad else ())
        tape.record_outputs(SDPA_BACKWARD, inputs, grads, {})
    return tuple(ops.sum_to(d, shape) if need else None for d, shape, need in zip(grads, c.shapes, c.needs))


# PyTorch's CPU flash-attention kernel (4-D inputs, no dropout): one node saving the
# query, key, value, output, the rows' logsumexp and the additive mask when given.
SDPA = Op("ScaledDotProductFlashAttentionForCpu", _sdpa_fwd, _sdpa_bwd,
          (0, 1, 2, "out", "logsumexp", "attn_mask"))


def flash_attention(q: Tensor, k: Tensor, v: Tensor, scale: float, mask: Tensor | None, causal: bool) -> Tensor:
    return apply(SDPA, q, k, v, scale=scale, mask=None if mask is None else mask.arr, causal=causal)
