"""Convolution, pooling and batch-norm modules over `nn_ops` (PyTorch's parameter
names, shapes, default initialisation and buffer versions)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import nn_ops, rng
from ...errors import NotSupportedByEngine
from ...tape import Tensor
from . import functional as F
from .modules import Module, factory, initialised


def _kaiming_like(shape: tuple[int, ...], fan_in: int) -> Any:
    """`kaiming_uniform_(a=sqrt(5))` and the bias rule: both U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
    return initialised(rng.generator().uniform(-bound, bound, shape, np.float32))


class _ConvNd(Module):
    spatial = 2
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        name = type(self).__name__
        factory(f"torch.nn.{name}", device, dtype)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular") or \
                padding_mode != "zeros" and (self.transposed or isinstance(padding, str)):
            raise NotSupportedByEngine(f"torch.nn.{name}(padding_mode={padding_mode!r})")
        self.padding_mode = padding_mode
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        k = nn_ops.pair(kernel_size, self.spatial)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, k
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.output_padding = output_padding
        shape = (in_channels, out_channels // groups) if self.transposed else \
            (out_channels, in_channels // groups)
        fan_in = shape[1] * int(np.prod(k))
        self.weight = _kaiming_like(shape + k, fan_in)
        self.bias = _kaiming_like((out_channels,), fan_in) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if self.transposed:
            return nn_ops.conv_transpose(x, self.weight, self.bias, self.stride, self.padding,
                                         self.output_padding, self.groups, self.dilation, self.spatial)
        if self.padding_mode != "zeros":  # PyTorch pads in that mode, then convolves unpadded
            pads = nn_ops.pair(self.padding, self.spatial)
            x = F.pad(x, [p for p in reversed(pads) for _ in range(2)], mode=self.padding_mode)
            return nn_ops.conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups, self.spatial)
        return nn_ops.conv(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                           self.groups, self.spatial)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"


class Conv1d(_ConvNd):
    spatial = 1


class Conv2d(_ConvNd):
    spatial = 2


class Conv3d(_ConvNd):
    spatial = 3


class ConvTranspose1d(_ConvNd):
    spatial, transposed = 1, True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, output_padding)


class ConvTranspose2d(ConvTranspose1d):
    spatial = 2


class ConvTranspose3d(ConvTranspose1d):
    spatial = 3


class _Pool(Module):
    spatial = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode


    def forward(self, x: Tensor) -> Any:
        return nn_ops.max_pool(x, self.kernel_size, self.stride, self.padding, self.dilation,
                               self.ceil_mode, self.return_indices, self.spatial)


class MaxPool1d(_Pool):
    spatial = 1


class MaxPool2d(_Pool):
    spatial = 2


class MaxPool3d(_Pool):
    spatial = 3


class _AvgPool(Module):
    spatial = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: Any = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.ceil_mode = kernel_size, stride, padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return nn_ops.avg_pool(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                               self.count_include_pad, self.divisor_override, self.spatial)


class AvgPool1d(_AvgPool):
    spatial = 1


class AvgPool2d(_AvgPool):
    spatial = 2


class AvgPool3d(_AvgPool):
    spatial = 3


class AdaptiveAvgPool1d(Module):
    spatial = 1

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return nn_ops.adaptive_avg_pool(x, self.output_size, self.spatial)


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    spatial = 2


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    spatial = 3


class _BatchNorm(Module):
    dims: tuple[int, ...] = (2, 3)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        factory(f"torch.nn.{type(self).__name__}", device, dtype)
        if momentum is None:
            raise NotSupportedByEngine(f"torch.nn.{type(self).__name__}(momentum=None)")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = initialised(np.ones(num_features)) if affine else None
        self.bias = initialised(np.zeros(num_features)) if affine else None
        self.running_mean: Tensor | None
        self.running_var: Tensor | None
        self.num_batches_tracked: Tensor | None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, np.float32), counter=[1, None]))
            self.register_buffer("running_var", Tensor(np.ones(num_features, np.float32), counter=[1, None]))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, np.int64), counter=[1, None]))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def forward(self, x: Tensor) -> Tensor:
        if x.arr.ndim not in self.dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self.dims)} input "
                             f"(got {x.arr.ndim}D input)")
        use_batch = self.training or not self.track_running_stats
        if self.training and self.num_batches_tracked is not None:  # tracking running statistics
            self.num_batches_tracked.arr[...] += 1
            self.num_batches_tracked._counter[0] += 1
        return F.batch_norm(x, self.running_mean if not use_batch or self.training else None,
                            self.running_var if not use_batch or self.training else None,
                            self.weight, self.bias, use_batch, self.momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    dims = (4,)


class BatchNorm3d(_BatchNorm):
    dims = (5,)
