"""`nn.MultiheadAttention` and `nn.TransformerEncoder(Layer)`, composed from tape ops
in PyTorch's order of operations (its math path), with its parameter names and
initialisation."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import fused, ops, rng
from ...errors import NotSupportedByEngine, only_defaults
from ...tape import Tensor
from . import functional as F
from . import init
from .modules import Dropout, LayerNorm, Linear, Module, ModuleList, factory, initialised


def _xavier(shape: tuple[int, int]) -> Any:
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (shape[0] + shape[1]))
    return initialised(rng.generator().uniform(-bound, bound, shape, np.float32))


class MultiheadAttention(Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.MultiheadAttention", device, dtype)
        only_defaults("torch.nn.MultiheadAttention", add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
        if (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotSupportedByEngine("torch.nn.MultiheadAttention with kdim/vdim")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        out_proj = Linear(embed_dim, embed_dim, bias=bias)  # drawn first, as in PyTorch
        self.in_proj_weight = _xavier((3 * embed_dim, embed_dim))
        self.in_proj_bias = initialised(np.zeros(3 * embed_dim)) if bias else None
        self.out_proj = out_proj
        if bias:
            self.out_proj.bias = initialised(np.zeros(embed_dim), 2)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        w, b = self.in_proj_weight, self.in_proj_bias
        if query is key and key is value:
            proj = F.linear(query, w, b)
            if not fused.pytorch_graph():
                return tuple(proj.chunk(3, -1))  # type: ignore[return-value]
            # PyTorch's _in_projection_packed: unflatten, unsqueeze, transpose, squeeze, copy, select
            e = self.embed_dim
            proj = proj.reshape(*proj.arr.shape[:-1], 3, e).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        ws = w.chunk(3)
        bs = b.chunk(3) if b is not None else (None, None, None)
        return (F.linear(query, ws[0], bs[0]), F.linear(key, ws[1], bs[1]), F.linear(value, ws[2], bs[2]))

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None,
                average_attn_weights: bool = True, is_causal: bool = False) -> tuple:
        unbatched = query.arr.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        elif self.batch_first:
            same_kv = key is value
            same = query is key and same_kv
            query = query.transpose(0, 1)
            key = query if same else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        tgt, bsz, e = query.arr.shape
        src, h, hd = key.arr.shape[0], self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        q = q.reshape(tgt, bsz * h, hd).transpose(0, 1)
        k = k.reshape(src, bsz * h, hd).transpose(0, 1)
        v = v.reshape(src, bsz * h, hd).transpose(0, 1)
        mask = self._mask(attn_mask, key_padding_mask, is_causal, q, bsz, tgt, src)
        p = self.dropout if self.training else 0.0
        if need_weights:
            q_scaled = q * math.sqrt(1.0 / hd)
            scores = ops.bmm(q_scaled, k.transpose(-2, -1)) if mask is None else \
                ops.baddbmm(mask, q_scaled, k.transpose(-2, -1))
            weights = ops.softmax(scores, -1)
            if p > 0:
                weights = F.dropout(weights, p, True)
            out = _rows(ops.bmm(weights, v).transpose(0, 1), tgt * bsz, e, "UnsafeViewBackward0")
            out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt, bsz, e)
            weights = weights.reshape(bsz, h, tgt, src)
            weights = weights.mean(1) if average_attn_weights else weights
            if unbatched:
                weights = weights.squeeze(0)
        else:
            m = mask
            if m is not None and m.arr.shape[0] > 1:  # per (batch, head) rows: split them
                m = m.reshape(bsz, h, *m.arr.shape[1:])
            out = F.scaled_dot_product_attention(q.reshape(bsz, h, tgt, hd), k.reshape(bsz, h, src, hd),
                                               v.reshape(bsz, h, src, hd), m, p)
            out = _rows(out.permute(2, 0, 1, 3), bsz * tgt, e, "")
            out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt, bsz, e)
            weights = None
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool,
              q: Tensor, bsz: int, tgt: int, src: int) -> Tensor | None:
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
        mask = F.additive_mask(attn_mask, q, true_blocks=True)
        if mask is not None and mask.arr.ndim == 2:
            mask = mask.unsqueeze(0)
        if key_padding_mask is not None:
            kpm = F.additive_mask(key_padding_mask, q, true_blocks=True)
            kpm = kpm.reshape(bsz, 1, 1, src).expand(bsz, self.num_heads, 1, src).reshape(
                bsz * self.num_heads, 1, src)
            mask = kpm if mask is None else mask + kpm
        return mask


def _rows(t: Tensor, n: int, e: int, node: str) -> Tensor:
    """PyTorch's `t.contiguous().view(n, e)` of the attention output (a copy only when
    the layout needs one)."""
    if not fused.pytorch_graph():
        return t.reshape(n, e)
    return ops.reshape(t.contiguous(), (n, e), node)


_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: Any) -> Callable[[Tensor], Tensor]:
    if not isinstance(activation, str):
        return activation  # a callable the caller passed
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


def _attend(attn: MultiheadAttention, x: Tensor, kv: Tensor, mask: Any, kpm: Any, is_causal: bool) -> Tensor:
    """A transformer layer's attention block: no weights, causal only with a mask (PyTorch's rule)."""
    return attn(x, kv, kv, attn_mask=mask, key_padding_mask=kpm, need_weights=False,
                is_causal=is_causal and mask is not None)[0]


def _feed_forward(layer: Any, x: Tensor) -> Tensor:
    return layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))


class TransformerEncoderLayer(Module):
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Any = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.TransformerEncoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Any, kpm: Any, is_causal: bool) -> Tensor:
        return self.dropout1(_attend(self.self_attn, x, x, mask, kpm, is_causal))

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(_feed_forward(self, x))


class TransformerEncoder(Module):
    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return self.norm(out) if self.norm is not None else out


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention over the memory, feed-forward; PyTorch's
    submodules in its order (so seeded initialisation draws the same numbers)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Any = "relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.TransformerDecoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Any, kpm: Any, is_causal: bool) -> Tensor:
        return self.dropout1(_attend(self.self_attn, x, x, mask, kpm, is_causal))

    def _mha_block(self, x: Tensor, mem: Tensor, mask: Any, kpm: Any, is_causal: bool) -> Tensor:
        return self.dropout2(_attend(self.multihead_attn, x, mem, mask, kpm, is_causal))

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(_feed_forward(self, x))


class TransformerDecoder(Module):
    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                        memory_is_causal=memory_is_causal)
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """PyTorch's encoder-decoder: its submodules in its order, then xavier_uniform_ on every
    matrix parameter (so a seeded model draws PyTorch's numbers)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Any = F.relu, custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory("torch.nn.Transformer", device, dtype)
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*args), num_encoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*args), num_decoder_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias))
        for p in self.parameters():
            if p.arr.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch = 0 if self.batch_first else 1
        if src.arr.ndim == 3 and src.arr.shape[batch] != tgt.arr.shape[batch]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.arr.shape[-1] != self.d_model or tgt.arr.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        factory("torch.nn.Transformer.generate_square_subsequent_mask", device, dtype)
        return Tensor(np.triu(np.full((sz, sz), -np.inf, np.float32), 1))
