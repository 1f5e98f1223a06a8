"""PyTorch's CPU LSTM layer: one fused oneDNN node, `MkldnnRnnLayerBackward0`.

PyTorch 2.13 on CPU runs each layer of a float32 `nn.LSTM` (oneDNN enabled, not
packed) as one `mkldnn_rnn_layer` call, so a program that inspects the graph sees
one node per layer: seven edges (the layer's input, its four weights, its h0 and
c0), three outputs (the layer's output, hy, cy) and eleven saved tensors (hx, cx,
input, the four weights, the three outputs and oneDNN's workspace). The numbers are
the LSTM cell's, unrolled over time. The backward runs the cell's gradient through
time with tensor ops from the saved inputs, so `create_graph` records it (as
PyTorch's differentiable backward, which also recomputes the forward, does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ops, tape
from .tape import Ctx, Op, Tensor

_SIGMOID, _TANH = ops.SIGMOID.forward, ops.TANH.forward


def _forward(x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray,
             h: np.ndarray, c: np.ndarray, has_biases: bool) -> tuple[np.ndarray, ...]:
    """(output, hy, cy, workspace) of one layer over time-major `x`; the workspace holds
    each step's activated gates and cell state (what oneDNN keeps for its backward).
    Without biases PyTorch passes zeros shaped like the weights, unused here."""
    n = w_hh.shape[1]
    projected = x @ w_ih.T + b_ih if has_biases else x @ w_ih.T
    outs, kept = [], []
    for xt in projected:
        gates = xt + (h @ w_hh.T + b_hh if has_biases else h @ w_hh.T)
        i, f, o = (_SIGMOID(gates[:, k * n:(k + 1) * n]) for k in (0, 1, 3))
        g = _TANH(gates[:, 2 * n:3 * n])
        c = f * c + i * g
        h = o * _TANH(c)
        outs.append(h)
        kept += [i, f, g, o, c]
    out = np.stack(outs) if outs else np.zeros((0,) + h.shape, h.dtype)
    workspace = np.concatenate([k.ravel() for k in kept]).view(np.uint8) if kept else np.zeros(0, np.uint8)
    return out, h, c, workspace


def _backward(ctx: Ctx, grads: Any) -> tuple:
    """The cell's gradient through time (BPTT), the forward recomputed with tensor ops."""
    s = ctx.saved
    x, w_ih, w_hh, h, c = s[0], s[1], s[2], s[5], s[6]
    b_ih, b_hh = (s[3], s[4]) if ctx.attrs["has_biases"] else (None, None)
    g_out, g_hy, g_cy = grads
    n = w_hh.arr.shape[1]
    steps = []
    projected = ops.linear(x, w_ih, b_ih)
    for t in range(x.arr.shape[0]):
        gates = projected[t] + ops.linear(h, w_hh, b_hh)
        i, f, g, o = (ops.sigmoid(gates[:, :n]), ops.sigmoid(gates[:, n:2 * n]),
                      ops.tanh(gates[:, 2 * n:3 * n]), ops.sigmoid(gates[:, 3 * n:]))
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = ops.tanh(c)
        h = o * tc
        steps.append((i, f, g, o, c_prev, h_prev, tc))
    zeros = np.zeros(h.arr.shape, h.arr.dtype)
    dh = g_hy if g_hy is not None else ops.const(zeros)
    dc = g_cy if g_cy is not None else ops.const(zeros)
    d_x, d_gates, d_w_ih, d_w_hh = [], [], None, None
    for t in reversed(range(len(steps))):
        i, f, g, o, c_prev, h_prev, tc = steps[t]
        if g_out is not None:
            dh = dh + g_out[t]
        dc = dc + dh * o * (1 - tc * tc)
        dg = ops.cat([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                      dh * tc * o * (1 - o)], 1)
        dh, dc = ops.matmul(dg, w_hh), dc * f
        d_x.append(ops.matmul(dg, w_ih))
        d_gates.append(dg)
        step_w_ih = ops.matmul(ops.transpose(dg, 0, 1), x[t])
        step_w_hh = ops.matmul(ops.transpose(dg, 0, 1), h_prev)
        d_w_ih = step_w_ih if d_w_ih is None else d_w_ih + step_w_ih
        d_w_hh = step_w_hh if d_w_hh is None else d_w_hh + step_w_hh
    d_b = ops.sum(ops.stack(d_gates, 0), (0, 1)) if d_gates else None
    d_input = ops.stack(d_x[::-1], 0) if d_x else None
    found = (d_input, d_w_ih, d_w_hh, d_b, d_b, dh, dc)
    return tuple(g if need else None for g, need in zip(found, ctx.needs))


LSTM_LAYER = Op("MkldnnRnnLayer", _forward, _backward,
                (5, 6, 0, 1, 2, 3, 4, ("out", 0), ("out", 1), ("out", 2), "workspace"))


def lstm_layer(x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor, hx: Tensor,
               cx: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One layer over time-major `x` (T, B, I) from state `hx`, `cx` (B, H): (output, hy, cy)."""
    has_biases = b_ih.arr.ndim == 1
    out, hy, cy, workspace = _forward(x.arr, w_ih.arr, w_hh.arr, b_ih.arr, b_hh.arr, hx.arr, cx.arr, has_biases)
    outs = [Tensor(out), Tensor(hy), Tensor(cy)]
    tape.record_outputs(LSTM_LAYER, (x, w_ih, w_hh, b_ih, b_hh, hx, cx), outs, {"has_biases": has_biases},
                        {"workspace": workspace})
    return outs[0], outs[1], outs[2]
