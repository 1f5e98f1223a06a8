"""RNN, GRU and LSTM (multi-layer, batch_first) and their cells, unrolled on the tape.

Under torch semantics RNN and GRU build ATen's CPU graph (`_rnn_impl`): each
layer projects its whole input once (`linear`, then `unbind` over time), each
step adds the hidden projection to its slice (GRU and LSTM split theirs with
`unsafe_chunk`), and the layer's outputs are stacked; a batch-first output is
transposed in place (`TransposeBackward1`). A float32 LSTM is PyTorch's fused
oneDNN layer node instead (`fused_rnn`), unless `torch.backends.mkldnn` is
disabled. Packed sequences are unrolled a step at a time (a few linear,
sigmoid/tanh and multiply nodes): they save tensors either way, which is what
hazard detection needs. Parameter names and gate order follow PyTorch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import fused, fused_rnn, ops
from ...errors import NotSupportedByEngine
from ...tape import Tensor
from .. import backends
from . import functional as F
from .modules import Module, _uniform, factory
from .packing import PackedSequence

Step = Callable[[Tensor, Any, tuple], Any]


def _rnn_step(nonlinearity: str) -> Step:
    act = ops.tanh if nonlinearity == "tanh" else ops.relu

    def step(x: Tensor, h: Tensor, w: tuple) -> Tensor:
        return act(_gates(x, h, w))
    return step


def _gates(x: Tensor, h: Tensor, w: tuple) -> Tensor:
    w_ih, w_hh, b_ih, b_hh = w
    return ops.linear(x, w_ih, b_ih) + ops.linear(h, w_hh, b_hh)


def _gru_step(x: Tensor, h: Tensor, w: tuple) -> Tensor:
    w_ih, w_hh, b_ih, b_hh = w
    gi = ops.linear(x, w_ih, b_ih).chunk(3, -1)
    gh = ops.linear(h, w_hh, b_hh).chunk(3, -1)
    r = ops.sigmoid(gi[0] + gh[0])
    z = ops.sigmoid(gi[1] + gh[1])
    n = ops.tanh(gi[2] + r * gh[2])
    return (1 - z) * n + z * h


def _rnn_projected(nonlinearity: str) -> Step:
    """ATen's SimpleCell with the input projected already: act(linear_hh(h).add_(x))."""
    act = ops.tanh if nonlinearity == "tanh" else ops.relu

    def step(xt: Tensor, h: Tensor, w: tuple) -> Tensor:
        return act(ops.linear(h, w[1], w[3]) + xt)
    return step


def _gru_projected(xt: Tensor, h: Tensor, w: tuple) -> Tensor:
    """ATen's GRUCell with the input projected already, its in-place ops out of place."""
    gi = ops.unsafe_chunk(xt, 3, 1)
    gh = ops.unsafe_chunk(ops.linear(h, w[1], w[3]), 3, 1)
    r = ops.sigmoid(gh[0] + gi[0])
    z = ops.sigmoid(gh[1] + gi[1])
    n = ops.tanh(gi[2] + gh[2] * r)
    return (h - n) * z + n


def _lstm_projected(xt: Tensor, state: tuple[Tensor, Tensor], w: tuple) -> tuple[Tensor, Tensor]:
    """ATen's LSTMCell with the input projected already, its in-place ops out of place."""
    h, c = state
    i, f, g, o = ops.unsafe_chunk(ops.linear(h, w[1], w[3]) + xt, 4, 1)
    cy = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(cy), cy


def _lstm_step(x: Tensor, state: tuple[Tensor, Tensor], w: tuple) -> tuple[Tensor, Tensor]:
    h, c = state
    i, f, g, o = _gates(x, h, w).chunk(4, -1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(c), c


class _RNNBase(Module):
    gate_count = 1
    output_transpose = "TransposeBackward1"  # ATen's output.transpose_(0, 1) for batch_first

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 nonlinearity: str = "tanh", proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        factory(f"torch.nn.{type(self).__name__}", device, dtype)
        if bidirectional or proj_size:
            raise NotSupportedByEngine(f"torch.nn.{type(self).__name__}(bidirectional/proj_size)")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.batch_first, self.dropout, self.bias = batch_first, dropout, bias
        self.nonlinearity = nonlinearity
        k = 1.0 / math.sqrt(hidden_size)
        g = self.gate_count * hidden_size
        for layer in range(num_layers):
            n_in = input_size if layer == 0 else hidden_size
            setattr(self, f"weight_ih_l{layer}", _uniform((g, n_in), k))
            setattr(self, f"weight_hh_l{layer}", _uniform((g, hidden_size), k))
            if bias:
                setattr(self, f"bias_ih_l{layer}", _uniform((g,), k))
                setattr(self, f"bias_hh_l{layer}", _uniform((g,), k))

    def _weights(self, layer: int) -> tuple:
        get = lambda n: getattr(self, f"{n}_l{layer}") if self.bias or n.startswith("w") else None  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _step(self) -> Step:
        return _rnn_step(self.nonlinearity)

    def _projected_step(self) -> Step | None:
        return _rnn_projected(self.nonlinearity)

    def _zero_state(self, batch: tuple, like: Tensor) -> Tensor:
        return ops.const(np.zeros((self.num_layers, *batch, self.hidden_size), like.arr.dtype))

    def forward(self, x: Any, hx: Any = None) -> tuple:
        if isinstance(x, PackedSequence):
            return self._forward_packed(x, hx)
        unbatched = x.arr.ndim == 2
        if unbatched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        batch = (x.arr.shape[1],)
        state = self._initial(hx, batch, x, unbatched)
        projected = self._projected_step() if fused.pytorch_graph() else None
        if self._fused(x):
            out, finals = self._run_fused(x.contiguous(), state)
        elif projected is not None:
            out, finals = self._run_projected(x, state, projected)
        else:
            seq, finals = self._run_layers(list(x.unbind(0)), state, None)
            out = ops.stack(seq, 0)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = ops.transpose(out, 0, 1, self.output_transpose)
        return out, self._final(finals, unbatched)

    def _fused(self, x: Tensor) -> bool:
        """Whether PyTorch runs this module as its fused oneDNN layers (only LSTM does)."""
        return False

    def _run_fused(self, x: Tensor, state: Any) -> tuple[Tensor, list]:
        raise NotImplementedError

    def _run_projected(self, x: Tensor, state: Any, step: Step) -> tuple[Tensor, list]:
        """ATen's layers: the input projected at once, unbound over time, outputs stacked."""
        finals, states = [], _unbound(state)  # ATen unbinds the given state by layer
        for layer in range(self.num_layers):
            w, s, outs = self._weights(layer), states[layer], []
            for xt in ops.linear(x, w[0], w[2]).unbind(0):
                s = step(xt, s, w)
                outs.append(s[0] if isinstance(s, tuple) else s)
            finals.append(s)
            x = ops.stack(outs, 0)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple:
        """Step t runs only the `batch_sizes[t]` sequences still going (the longest first);
        the others keep their state, which is their final one (PyTorch's packed walk)."""
        sizes = packed.steps()
        order = packed.sorted_indices
        state = self._initial(hx if order is None else _each(hx, lambda h: ops.index(h, (slice(None), order.arr))),
                              (sizes[0],), packed.data, False)
        starts = np.cumsum([0] + sizes)
        seq = [ops.index(packed.data, (slice(int(a), int(a) + b),)) for a, b in zip(starts, sizes)]
        seq, finals = self._run_layers(seq, state, sizes)
        final = self._final(finals, False)
        unsorted = packed.unsorted_indices
        if unsorted is not None:
            final = _each(final, lambda h: ops.index(h, (slice(None), unsorted.arr)))
        return PackedSequence(ops.cat(seq, 0), packed.batch_sizes, order, packed.unsorted_indices), final

    def _run_layers(self, seq: list[Tensor], state: Any, sizes: list[int] | None) -> tuple[list, list]:
        """Each layer over the time steps; with `sizes` (a packed sequence) step t runs only
        its first sizes[t] rows. Returns the last layer's outputs and each layer's final state."""
        step, finals = self._step(), []
        for layer in range(self.num_layers):
            w, s, outs = self._weights(layer), self._layer_state(state, layer), []
            for t, xt in enumerate(seq):
                if sizes is None:
                    s = new = step(xt, s, w)
                else:
                    new = step(xt, _each(s, functools.partial(_rows, sizes[t])), w)
                    s = _merge(s, new, sizes[t])
                outs.append(new[0] if isinstance(new, tuple) else new)
            finals.append(s)
            seq = outs
            if self.dropout and self.training and layer < self.num_layers - 1:
                seq = [F.dropout(o, self.dropout, True) for o in seq]
        return seq, finals

    def _initial(self, hx: Any, batch: tuple, x: Tensor, unbatched: bool) -> Any:
        if hx is None:
            return self._zero_state(batch, x)
        return hx.unsqueeze(1) if unbatched else hx

    def _layer_state(self, state: Any, layer: int) -> Any:
        return state[layer]

    def _final(self, finals: list, unbatched: bool) -> Any:
        h = ops.stack(finals, 0)
        return h.squeeze(1) if unbatched else h


def _each(state: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """`fn` on a hidden state, or on each of LSTM's (h, c)."""
    if state is None:
        return None
    return tuple(fn(s) for s in state) if isinstance(state, tuple) else fn(state)


def _unbound(state: Any) -> list:
    """Each layer's state: h.unbind(0) (LSTM: h's and c's, paired)."""
    if isinstance(state, tuple):
        return list(zip(*(s.unbind(0) for s in state)))
    return list(state.unbind(0))


def _rows(b: int, h: Tensor) -> Tensor:
    return h[:b]


def _merge(old: Any, new: Any, b: int) -> Any:
    """The state after a packed step: `new` for its first `b` rows, `old` below them."""
    if isinstance(old, tuple):
        return tuple(_merge(o, n, b) for o, n in zip(old, new))
    return new if old.arr.shape[0] == b else ops.cat([new, old[b:]], 0)


class RNN(_RNNBase):
    pass


class GRU(_RNNBase):
    gate_count = 3

    def _step(self) -> Step:
        return _gru_step

    def _projected_step(self) -> Step | None:
        return _gru_projected


class LSTM(_RNNBase):
    gate_count = 4
    output_transpose = ""  # ATen's LSTM transposes a batch-first output out of place

    def _step(self) -> Step:
        return _lstm_step

    def _projected_step(self) -> Step | None:
        return _lstm_projected

    def _fused(self, x: Tensor) -> bool:
        """ATen's `use_mkldnn`: a float32 input that is not empty, oneDNN enabled."""
        return (fused.pytorch_graph() and backends.mkldnn.enabled and x.arr.dtype == np.float32
                and x.arr.size > 0)

    def _run_fused(self, x: Tensor, state: Any) -> tuple[Tensor, list]:
        """ATen's `mkldnn_rnn`: one fused node per layer, each given its layer's
        `hx[layer]`, `cx[layer]` (zeros for the biases of a module without them)."""
        h, c = state
        finals = []
        for layer in range(self.num_layers):
            w_ih, w_hh, b_ih, b_hh = self._weights(layer)
            if b_ih is None:
                b_ih, b_hh = ops.const(np.zeros_like(w_ih.arr)), ops.const(np.zeros_like(w_hh.arr))
            x, hy, cy = fused_rnn.lstm_layer(x, w_ih, w_hh, b_ih, b_hh, h[layer], c[layer])
            finals.append((hy, cy))
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _initial(self, hx: Any, batch: tuple, x: Tensor, unbatched: bool) -> Any:
        if hx is None:
            z = self._zero_state(batch, x)
            return z, z
        h, c = hx
        return (h.unsqueeze(1), c.unsqueeze(1)) if unbatched else (h, c)

    def _layer_state(self, state: Any, layer: int) -> Any:
        return state[0][layer], state[1][layer]

    def _final(self, finals: list, unbatched: bool) -> Any:
        h = ops.stack([f[0] for f in finals], 0)
        c = ops.stack([f[1] for f in finals], 0)
        return (h.squeeze(1), c.squeeze(1)) if unbatched else (h, c)


class _CellBase(Module):
    gate_count = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        factory(f"torch.nn.{type(self).__name__}", device, dtype)
        self.input_size, self.hidden_size, self.nonlinearity = input_size, hidden_size, nonlinearity
        k = 1.0 / math.sqrt(hidden_size)
        g = self.gate_count * hidden_size
        self.weight_ih = _uniform((g, input_size), k)
        self.weight_hh = _uniform((g, hidden_size), k)
        self.bias_ih = _uniform((g,), k) if bias else None
        self.bias_hh = _uniform((g,), k) if bias else None

    def _w(self) -> tuple:
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def _zeros(self, x: Tensor) -> Tensor:
        return ops.const(np.zeros(x.arr.shape[:-1] + (self.hidden_size,), x.arr.dtype))


class RNNCell(_CellBase):
    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        return _rnn_step(self.nonlinearity)(x, self._zeros(x) if h is None else h, self._w())


class GRUCell(_CellBase):
    gate_count = 3

    def forward(self, x: Tensor, h: Tensor | None = None) -> Tensor:
        return _gru_step(x, self._zeros(x) if h is None else h, self._w())


class LSTMCell(_CellBase):
    gate_count = 4

    def forward(self, x: Tensor, hx: Any = None) -> tuple[Tensor, Tensor]:
        state = (self._zeros(x), self._zeros(x)) if hx is None else tuple(hx)
        return _lstm_step(x, state, self._w())
