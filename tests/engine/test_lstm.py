"""`nn.LSTM` builds PyTorch 2.13's CPU graph: one fused `MkldnnRnnLayerBackward0`
node per layer for float32 (its seven edges, three outputs and eleven saved
tensors), ATen's unfused cells under `torch.backends.mkldnn.flags(enabled=False)`;
the same outputs, gradients and second-order gradients as PyTorch."""

from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np
import pytest

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 5)).astype(np.float32)
H = RNG.standard_normal((2, 3, 6)).astype(np.float32)


def _lstm(*args, pick=lambda out: [out[0], out[1][0], out[1][1]], **kwargs):
    """build(L, x, *state) for an LSTM made with these arguments: (module, picked outputs)."""
    def build(L, x, *state):
        module = L.nn.LSTM(*args, **kwargs)
        return module, pick(module(x, tuple(state)) if state else module(x))
    return build


def _unbatched(L, x):
    return _lstm(5, 6)(L, x[0])


# case -> (build(L, *inputs) -> (module, outputs), inputs as (array, requires_grad))
CASES = {
    "batch_first": (_lstm(5, 6, batch_first=True, pick=lambda out: [out[0]]), [(X, False)]),
    "batch_first_input_grad": (_lstm(5, 6, batch_first=True), [(X, True)]),
    "two_layers": (_lstm(5, 6, 2), [(X, True)]),
    "given_state": (_lstm(5, 6, 2), [(X, True), (H, True), (H * 0.5, True)]),
    "no_bias": (_lstm(5, 6, bias=False), [(X, True)]),
    "unbatched": (_unbatched, [(X, True)]),
    "dropout_between_layers": (_lstm(5, 6, 2, dropout=0.5, pick=lambda out: [out[0]]), [(X, True)]),
}


def _nodes(outs: list) -> tuple[Counter, list]:
    """Each node with its edges (class, output_nr), counted; the outputs' (class, output_nr)."""
    seen, queue, counts = set(), [o.grad_fn for o in outs], Counter()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue  # the engine makes a fresh AccumulateGrad per access: not counted
        seen.add(id(node))
        edges = tuple((type(n).__name__ if n is not None else None, nr) for n, nr in node.next_functions)
        counts[(type(node).__name__, edges)] += 1
        queue.extend(n for n, _ in node.next_functions)
    return counts, [(type(o.grad_fn).__name__, o.output_nr) for o in outs]


def _run(L, name: str, mkldnn: bool) -> dict:
    build, inputs = CASES[name]
    L.manual_seed(0)
    ts = [L.tensor(a, requires_grad=rg) for a, rg in inputs]
    shapes: list[tuple] = []
    flags = contextlib.nullcontext() if mkldnn else L.backends.mkldnn.flags(enabled=False)
    with flags, L.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
        module, outs = build(L, *ts)
    params = [t for t in ts if t.requires_grad] + list(module.parameters())
    loss = sum((o * o.detach().sin()).sum() for o in outs)
    grads = L.autograd.grad(loss, params, create_graph=True, allow_unused=True)
    second = L.autograd.grad(sum((g * g).sum() for g in grads if g is not None), params, allow_unused=True)
    return {"nodes": _nodes(outs),
            # oneDNN's workspace (a flat uint8 buffer) has oneDNN's own page-aligned size
            "saved": [s if len(s) > 1 else "flat" for s in shapes],
            "values": [o.detach().numpy() for o in outs],
            "grads": [g.detach().numpy() for g in grads if g is not None],
            "second": [g.numpy() for g in second if g is not None]}


@pytest.mark.parametrize("mkldnn", [True, False], ids=["mkldnn", "mkldnn_disabled"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_lstm_graph_and_numbers_are_pytorchs(fresh, name: str, mkldnn: bool) -> None:
    got, want = _run(E, name, mkldnn), _run(torch, name, mkldnn)
    assert got["nodes"] == want["nodes"]
    assert got["saved"] == want["saved"]
    for key in ("values", "grads", "second"):
        assert len(got[key]) == len(want[key])
        for g, w in zip(got[key], want[key]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_fused_node_is_one_per_layer_with_pytorchs_edges(fresh) -> None:
    out, (h, c) = E.nn.LSTM(5, 6, 2)(E.tensor(X))
    node = out.grad_fn
    assert type(node).__name__ == "MkldnnRnnLayerBackward0"
    assert [type(n).__name__ if n is not None else None for n, _ in node.next_functions] == [
        "MkldnnRnnLayerBackward0", "AccumulateGrad", "AccumulateGrad", "AccumulateGrad", "AccumulateGrad",
        None, None]
    assert [nr for _, nr in h.grad_fn.next_functions] == [1, 1]
    assert [nr for _, nr in c.grad_fn.next_functions] == [2, 2]


def test_mkldnn_flags_are_restored_and_second_backward_fails_as_pytorchs(fresh) -> None:
    with E.backends.mkldnn.flags(enabled=False):
        assert E.backends.mkldnn.enabled is False
    assert E.backends.mkldnn.enabled is True
    for L in (E, torch):
        L.manual_seed(0)
        loss = L.nn.LSTM(5, 6)(L.tensor(X))[0].sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
