"""`torch.nn`."""

from __future__ import annotations

from typing import Any

from ...errors import NotSupportedByEngine
from . import functional, init, packing, utils  # noqa: F401
from .attention import (  # noqa: F401
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .layers import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .modules import (  # noqa: F401
    ELU,
    GELU,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    EmbeddingBag,
    Flatten,
    GroupNorm,
    Hardtanh,
    HuberLoss,
    Identity,
    InstanceNorm1d,
    InstanceNorm2d,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSigmoid,
    LogSoftmax,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    Parameter,
    ParameterList,
    ReLU,
    ReLU6,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
    Upsample,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.{name}")
