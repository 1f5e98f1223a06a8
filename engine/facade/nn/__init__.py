"""`torch.nn`."""

from __future__ import annotations

from typing import Any

from ...errors import NotSupportedByEngine
from . import functional, init, utils  # noqa: F401
from .modules import (ELU, GELU, BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout,  # noqa: F401
                      Embedding, EmbeddingBag, Flatten, Identity, L1Loss, LayerNorm, LeakyReLU, Linear,
                      LogSigmoid, LogSoftmax, Module, ModuleDict, ModuleList, MSELoss, NLLLoss,
                      Parameter, ReLU, ReLU6, Sequential, Sigmoid, SiLU, SmoothL1Loss, Softmax,
                      Softplus, Tanh)
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer  # noqa: F401
from .layers import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d,  # noqa: F401
                     BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d,
                     MaxPool1d, MaxPool2d)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.nn.{name}")
