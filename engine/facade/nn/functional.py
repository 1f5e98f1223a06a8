"""`torch.nn.functional`: activations, layers and losses.

Under torch semantics the functions PyTorch runs as one fused kernel (losses,
layer norm, gelu, ...) record its one node (`fused`); under strict semantics
they are composed from the tape's primitive ops, as burn's tape records them.
Composites save what their parts save, so a second backward fails alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from ... import fused, nn_ops, ops, resample, rng
from ...errors import NotSupportedByEngine, only_defaults
from ...tape import Tensor

tanh, sigmoid = ops.tanh, ops.sigmoid
softmax, log_softmax, linear = ops.softmax, ops.log_softmax, ops.linear
interpolate = resample.interpolate


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    if mode == "constant":
        return ops.pad(input, pad, 0.0 if value is None else value)
    return resample.pad(input, pad, mode)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Tensor:
    return resample.interpolate(input, size, scale_factor, mode, align_corners)


def _inplace_result(x: Tensor, out: Tensor, inplace: bool) -> Tensor:
    if inplace:
        raise NotSupportedByEngine("inplace=True activations")
    return out


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu_() if inplace else ops.relu(x)


def relu_(x: Tensor) -> Tensor:
    return x.relu_()


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _inplace_result(x, ops.leaky_relu(x, negative_slope), inplace)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if fused.pytorch_graph():
        return _inplace_result(x, fused.activation(fused.HARDTANH, x, lo=min_val, hi=max_val), inplace)
    return _inplace_result(x, ops.clamp(x, min_val, max_val), inplace)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(x, 0.0, 6.0, inplace)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if fused.pytorch_graph():
        return fused.activation(fused.GELU, x, approximate=approximate)
    if approximate == "tanh":
        inner = (x + 0.044715 * x ** 3) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (1.0 + ops.tanh(inner))
    return x * 0.5 * (1.0 + ops.erf(x * (1.0 / math.sqrt(2.0))))


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    if fused.pytorch_graph():
        return _inplace_result(x, fused.activation(fused.SILU, x), inplace)
    return _inplace_result(x, x * ops.sigmoid(x), inplace)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    if fused.pytorch_graph():
        return fused.activation(fused.SOFTPLUS, x, beta=beta, threshold=threshold)
    bx = x * beta
    return ops.where(bx.arr > threshold, x, -ops.logsigmoid(-bx) / beta)


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if fused.pytorch_graph():
        return _inplace_result(x, fused.activation(fused.ELU, x, alpha=alpha), inplace)
    neg = (ops.exp(ops.clamp(x, max=0.0)) - 1.0) * alpha
    return _inplace_result(x, ops.where(x.arr > 0, x, neg), inplace)


logsigmoid = ops.logsigmoid


def softmin(x: Tensor, dim: int) -> Tensor:
    return ops.softmax(-x, dim)


def normalize(x: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    n = ops.clamp(ops.norm(x, p, dim, keepdim=True), min=eps, node="ClampMinBackward0")
    return x / (ops.expand(n, x.arr.shape) if fused.pytorch_graph() else n)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    if fused.pytorch_graph():  # PyTorch: each input over its clamped norm, then the dot product
        return ops.sum(x1 / fused.clamped_copy(ops.norm(x1, 2, dim, keepdim=True), eps)
                       * (x2 / fused.clamped_copy(ops.norm(x2, 2, dim, keepdim=True), eps)), dim)
    n1 = ops.clamp(ops.norm(x1, 2, dim), min=eps)
    n2 = ops.clamp(ops.norm(x2, 2, dim), min=eps)
    return ops.sum(x1 * x2, dim) / (n1 * n2)


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise; `batchmean` divides by the batch size."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:
        t = target.arr
        logt = ops.const(np.where(t > 0, np.log(np.where(t > 0, t, 1)), 0).astype(t.dtype))
        loss = target * (logt - input)
    if reduction == "batchmean":
        return ops.sum(loss) / float(input.arr.shape[0])
    return _reduce(loss, reduction)


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Identity (no node) in eval or with p=0; else a multiply by the scaled mask, as on CPU."""
    if not training or p == 0:
        return x
    only_defaults("torch.nn.functional.dropout", inplace=inplace)
    keep = rng.generator().bernoulli_like(1.0 - p, x.arr)
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    return x * ops.const((keep * scale).astype(x.arr.dtype))


def embedding(idx: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    only_defaults("torch.nn.functional.embedding", max_norm=max_norm,
                  scale_grad_by_freq=scale_grad_by_freq)
    rows = np.asarray(idx.arr if isinstance(idx, Tensor) else idx)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.arr.shape[0]
    return ops.embedding(weight, rows, padding_idx)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,  # noqa: A002
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Rows of `input` (2-D) or segments cut by `offsets` (1-D), each reduced by sum/mean/max."""
    only_defaults("torch.nn.functional.embedding_bag", max_norm=max_norm,
                  scale_grad_by_freq=scale_grad_by_freq, padding_idx=padding_idx)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights "
                                  f"is only supported for mode='sum' (got mode='{mode}').")
    rows = embedding(input, weight)
    if per_sample_weights is not None:
        rows = rows * ops.unsqueeze(per_sample_weights, -1)
    reduce = {"sum": lambda t: ops.sum(t, 0), "mean": lambda t: ops.mean(t, 0),
              "max": lambda t: t.max(0).values}[mode]
    if input.arr.ndim == 2:
        return ops.stack([reduce(r) for r in rows.unbind(0)], 0) if input.arr.shape[0] else rows
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    starts = offsets.arr.astype(np.int64).tolist()
    ends = starts[1:] + ([] if include_last_offset else [input.arr.shape[0]])
    if include_last_offset:
        starts = starts[:-1]
    zero = ops.const(np.zeros(weight.arr.shape[1], weight.arr.dtype))
    return ops.stack([reduce(rows[a:b]) if b > a else zero for a, b in zip(starts, ends)], 0)


def one_hot(t: Tensor, num_classes: int = -1) -> Tensor:
    n = int(t.arr.max()) + 1 if num_classes < 0 else num_classes
    return Tensor(np.eye(n, dtype=np.int64)[t.arr])


def layer_norm(x: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if fused.pytorch_graph():
        return fused.layer_norm(x, len(shape), weight, bias, eps)
    dims = tuple(range(-len(shape), 0))
    mu = ops.mean(x, dims, keepdim=True)
    centered = x - mu
    var = ops.mean(centered * centered, dims, keepdim=True)
    out = centered * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over each group of channels (and all spatial positions), then scale per
    channel; composed from the tape's ops (PyTorch records one NativeGroupNorm node)."""
    shape = input.arr.shape
    n, c = shape[0], shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    centered = grouped - ops.mean(grouped, 2, keepdim=True)
    out = (centered * ops.rsqrt(ops.mean(centered * centered, 2, keepdim=True) + eps)).reshape(*shape)
    per_channel = (1, c) + (1,) * (len(shape) - 2)
    if weight is not None:
        out = out * weight.reshape(*per_channel)
    if bias is not None:
        out = out + bias.reshape(*per_channel)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    only_defaults("torch.nn.functional.instance_norm", running_mean=running_mean, running_var=running_var)
    if not use_input_stats:
        raise NotSupportedByEngine("torch.nn.functional.instance_norm(use_input_stats=False)")
    return group_norm(input, input.arr.shape[1], weight, bias, eps)


# ------------------------------------------------------- convolution, pooling


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:  # noqa: A002
    return nn_ops.unfold(input, kernel_size, dilation, padding, stride)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
         stride: Any = 1) -> Tensor:
    return nn_ops.fold(input, output_size, kernel_size, dilation, padding, stride)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    return nn_ops.conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    return nn_ops.conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    return nn_ops.conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    return nn_ops.conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    return nn_ops.conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    return nn_ops.conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation, 3)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return nn_ops.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return nn_ops.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return nn_ops.max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return nn_ops.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Tensor:
    return nn_ops.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, 2)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Tensor:
    return nn_ops.avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, 3)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return nn_ops.adaptive_avg_pool(input, output_size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return nn_ops.adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    return nn_ops.adaptive_avg_pool(input, output_size, 3)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return nn_ops.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


# ------------------------------------------------------------------ attention


@overload
def additive_mask(mask: None, like: Tensor, true_blocks: bool) -> None: ...


@overload
def additive_mask(mask: Tensor, like: Tensor, true_blocks: bool) -> Tensor: ...


def additive_mask(mask: Tensor | None, like: Tensor, true_blocks: bool) -> Tensor | None:
    """A mask as the float added to attention scores (-inf where attention is blocked)."""
    if mask is None:
        return None
    if mask.arr.dtype == np.bool_:
        blocked = mask.arr if true_blocks else ~mask.arr
        return ops.const(np.where(blocked, -np.inf, 0.0).astype(like.arr.dtype))
    return mask


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Tensor:
    only_defaults("torch.nn.functional.scaled_dot_product_attention", enable_gqa=enable_gqa)
    n_q, n_k = query.arr.shape[-2], key.arr.shape[-2]
    factor = 1.0 / math.sqrt(query.arr.shape[-1]) if scale is None else scale
    if fused.pytorch_graph() and dropout_p == 0 and all(t.arr.ndim == 4 for t in (query, key, value)) \
            and not (attn_mask is not None and attn_mask.requires_grad):  # PyTorch's flash kernel
        mask = additive_mask(attn_mask, query, true_blocks=False)
        return fused.flash_attention(query, key, value, factor, mask, is_causal)
    scores = ops.matmul(query, ops.transpose(key, -2, -1)) * factor
    if is_causal:
        scores = scores + ops.const(np.where(np.tril(np.ones((n_q, n_k), bool)), 0.0, -np.inf)
                                    .astype(scores.arr.dtype))
    mask = additive_mask(attn_mask, scores, true_blocks=False)
    if mask is not None:
        scores = scores + mask
    weights = ops.softmax(scores, -1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p, True)
    return ops.matmul(weights, value)


# ------------------------------------------------------------------- losses


def legacy_reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    """PyTorch's reading of the deprecated `size_average=`/`reduce=` (either given wins
    over `reduction`): reduce=False keeps every element, else size_average picks mean or sum."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is not None and not reduce:
        return "none"
    return "sum" if size_average is not None and not size_average else "mean"


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
             reduction: str = "mean", weight: Any = None) -> Tensor:
    only_defaults("torch.nn.functional.mse_loss", weight=weight)
    reduction = legacy_reduction(size_average, reduce, reduction)
    if fused.pytorch_graph():
        return fused.mse_loss(input, target, reduction)
    d = input - target
    return _reduce(d ** 2, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
            reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _reduce(ops.abs(input - target), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta == 0:  # PyTorch runs an L1 loss then
        return l1_loss(input, target, reduction=reduction)
    if fused.pytorch_graph():
        return fused.smooth_l1_loss(input, target, reduction, beta)
    d = ops.abs(input - target)
    return _reduce(ops.where(d.arr < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,  # noqa: A002
               weight: Any = None) -> Tensor:
    only_defaults("torch.nn.functional.huber_loss", weight=weight)
    if fused.pytorch_graph():
        return fused.smooth_l1_loss(input, target, reduction, delta, huber=True)
    d = ops.abs(input - target)
    return _reduce(ops.where(d.arr < delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood over dim 1 (dim 0 for an unbatched input)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if fused.pytorch_graph():
        return fused.nll_loss(input, target.arr, weight, ignore_index, reduction)
    cdim = 1 if input.arr.ndim > 1 else 0
    tgt = target.arr.astype(np.int64)
    valid = tgt != ignore_index
    safe = np.where(valid, tgt, 0)
    picked = ops.gather(input, cdim, np.expand_dims(safe, cdim)).squeeze(cdim)
    w = np.ones(tgt.shape, input.arr.dtype) if weight is None else weight.arr[safe]
    w = (w * valid).astype(input.arr.dtype)
    loss = -picked * ops.const(w)
    if reduction == "mean":
        return ops.sum(loss) / float(w.sum())
    return _reduce(loss, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    cdim = 1 if input.arr.ndim > 1 else 0
    logp = ops.log_softmax(input, cdim)
    if target.arr.dtype.kind == "f":  # class probabilities
        if label_smoothing:
            n = input.arr.shape[cdim]
            target = target * (1 - label_smoothing) + label_smoothing / n
        w = 1.0 if weight is None else ops.reshape(weight, (-1,) + (1,) * (input.arr.ndim - cdim - 1))
        return _reduce(-ops.sum(logp * target * w, cdim), reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    if weight is not None:
        raise NotSupportedByEngine("cross_entropy with both weight and label_smoothing")
    # PyTorch's composition: -sum of the log-probabilities over classes, zero where ignored,
    # reduced (the mean over the targets not ignored), mixed with the NLL by scalar products
    ignored = target.arr == ignore_index
    smooth = ops.where(ignored, 0.0, -ops.sum(logp, cdim), "MaskedFillBackward0")
    if reduction == "mean":
        smooth = ops.sum(smooth) / ops.const(np.int64((~ignored).sum()))
    elif reduction == "sum":
        smooth = ops.sum(smooth)
    return ops.scale(nll, 1 - label_smoothing) + ops.scale(smooth, label_smoothing / input.arr.shape[cdim])


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None, size_average: Any = None,
                                     reduce: Any = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    constant = all(t is None or not t.requires_grad for t in (weight, pos_weight))
    if fused.pytorch_graph() and constant:
        return fused.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)
    log_one_plus_exp_neg = -ops.logsigmoid(input)
    if pos_weight is None:
        loss = (1 - target) * input + log_one_plus_exp_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * log_one_plus_exp_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    reduction = legacy_reduction(size_average, reduce, reduction)
    if fused.pytorch_graph() and (weight is None or not weight.requires_grad):
        return fused.binary_cross_entropy(input, target, weight, reduction)
    log_p = ops.clamp(ops.log(input), min=-100.0)
    log_q = ops.clamp(ops.log(1 - input), min=-100.0)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.functional.{name}")
