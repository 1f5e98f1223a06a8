"""scaled_dot_product_attention, MultiheadAttention and TransformerEncoder against PyTorch:
outputs, attention weights and gradients, with PyTorch's parameters copied in."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def _copy_params(theirs, ours) -> None:
    mine = dict(ours.named_parameters())
    names = [n for n, _ in theirs.named_parameters()]
    assert names == list(mine)
    for n, p in theirs.named_parameters():
        assert tuple(mine[n].shape) == tuple(p.shape)
        mine[n].arr[...] = p.detach().numpy()


def _grads_agree(pairs) -> None:
    for a, b in pairs:
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"},
                                {"scale": 0.3}])
def test_sdpa_agrees(fresh, kw: dict) -> None:
    arrays = [RNG.standard_normal((2, 2, 4, 3)).astype(np.float32) for _ in range(3)]
    bool_mask = RNG.random((4, 4)) > 0.3
    bool_mask[:, 0] = True
    out = []
    for L in (torch, E):
        q, k, v = (L.tensor(a, requires_grad=True) for a in arrays)
        extra = {key: val for key, val in kw.items() if key != "mask"}
        if kw.get("mask") == "bool":
            extra["attn_mask"] = L.tensor(bool_mask)
        elif kw.get("mask") == "float":
            extra["attn_mask"] = L.tensor(bool_mask.astype(np.float32))
        y = L.nn.functional.scaled_dot_product_attention(q, k, v, **extra)
        (y * y).sum().backward()
        out.append([y.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    _grads_agree(zip(out[1], out[0]))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", [False, True])
def test_multihead_attention_agrees(fresh, batch_first: bool, need_weights: bool, masks: bool) -> None:
    x = RNG.standard_normal((3, 2, 8)).astype(np.float32)
    mem = RNG.standard_normal((5, 2, 8)).astype(np.float32)
    if batch_first:
        x, mem = x.transpose(1, 0, 2).copy(), mem.transpose(1, 0, 2).copy()
    kpm = np.array([[False] * 4 + [True], [False] * 5])
    attn = np.triu(np.ones((3, 5), bool), 3)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    ours = E.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    _copy_params(theirs, ours)
    results = []
    for L, m in ((torch, theirs), (E, ours)):
        q, kv = L.tensor(x, requires_grad=True), L.tensor(mem, requires_grad=True)
        kw = dict(key_padding_mask=L.tensor(kpm), attn_mask=L.tensor(attn)) if masks else {}
        out, w = m(q, kv, kv, need_weights=need_weights, **kw)
        (out * out).sum().backward()
        results.append([out.detach().numpy(), q.grad.numpy(), kv.grad.numpy(),
                        m.in_proj_weight.grad.numpy()] + ([w.detach().numpy()] if need_weights else []))
        assert (w is None) == (not need_weights)
    _grads_agree(zip(results[1], results[0]))


def test_mha_parameter_versions_match(fresh) -> None:
    theirs, ours = torch.nn.MultiheadAttention(4, 2), E.nn.MultiheadAttention(4, 2)
    for (n, p), (_, q) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert p._version == q._version, n


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_agrees(fresh, norm_first: bool) -> None:
    x = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    kpm = np.array([[False] * 5, [False] * 3 + [True] * 2])
    models = []
    for L in (torch, E):
        layer = L.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                             norm_first=norm_first, activation="gelu")
        models.append(L.nn.TransformerEncoder(layer, 2, norm=L.nn.LayerNorm(8), enable_nested_tensor=False))
    _copy_params(*models)
    results = []
    for L, m in zip((torch, E), models):
        t = L.tensor(x, requires_grad=True)
        y = m(t, src_key_padding_mask=L.tensor(kpm))
        (y * y).sum().backward()
        results.append([y.detach().numpy(), t.grad.numpy(), m.layers[0].linear1.weight.grad.numpy()])
    _grads_agree(zip(results[1], results[0]))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_agrees(fresh, norm_first: bool) -> None:
    tgt = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    mem = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    causal = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    mem_kpm = np.array([[False] * 5, [False] * 4 + [True]])
    models = []
    for L in (torch, E):
        layer = L.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                             norm_first=norm_first)
        models.append(L.nn.TransformerDecoder(layer, 2, norm=L.nn.LayerNorm(8)))
    _copy_params(*models)
    results = []
    for L, m in zip((torch, E), models):
        t, s = L.tensor(tgt, requires_grad=True), L.tensor(mem, requires_grad=True)
        y = m(t, s, tgt_mask=L.tensor(causal), memory_key_padding_mask=L.tensor(mem_kpm))
        (y * y).sum().backward()
        results.append([y.detach().numpy(), t.grad.numpy(), s.grad.numpy(),
                        m.layers[1].multihead_attn.in_proj_weight.grad.numpy()])
    _grads_agree(zip(results[1], results[0]))


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_seq2seq_agrees_with_seeded_initialisation(fresh, batch_first: bool) -> None:
    """nn.Transformer: seeded construction draws PyTorch's parameters (xavier on every
    matrix after the layers' own init), and forward and gradients agree, with PyTorch's
    causal mask and padding masks."""
    src = RNG.standard_normal((2, 5, 8) if batch_first else (5, 2, 8)).astype(np.float32)
    tgt = RNG.standard_normal((2, 4, 8) if batch_first else (4, 2, 8)).astype(np.float32)
    src_kpm = np.array([[False] * 5, [False] * 3 + [True] * 2])
    results = []
    for L in (torch, E):
        L.manual_seed(3)
        model = L.nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
                                 dropout=0.0, batch_first=batch_first)
        mask = L.nn.Transformer.generate_square_subsequent_mask(4)
        s, t = L.tensor(src, requires_grad=True), L.tensor(tgt, requires_grad=True)
        y = model(s, t, tgt_mask=mask, src_key_padding_mask=L.tensor(src_kpm),
                  memory_key_padding_mask=L.tensor(src_kpm))
        (y * y).sum().backward()
        results.append([mask.numpy(), model.encoder.layers[1].linear2.weight.detach().numpy(), y.detach().numpy(),
                        s.grad.numpy(), t.grad.numpy(), model.decoder.layers[0].self_attn.in_proj_weight.grad.numpy()])
    names = [n for n, _ in torch.nn.Transformer(8, 2, 1, 1, 16).named_parameters()]
    assert names == [n for n, _ in E.nn.Transformer(8, 2, 1, 1, 16).named_parameters()]
    _grads_agree(zip(results[1], results[0]))


def _flash_structure(L, **kw) -> list:
    q, k, v = (L.tensor(RNG.standard_normal((2, 2, 4, 3)).astype(np.float32), requires_grad=True)
               for _ in range(3))
    out = L.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    node = out.grad_fn
    saved = []
    with L.autograd.graph.saved_tensors_hooks(lambda t: saved.append(tuple(t.shape)) or t, lambda t: t):
        L.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
    grads = L.autograd.grad(out.sum(), [q, k, v], create_graph=True)
    return [type(node).__name__, [type(n).__name__ for n, _ in node.next_functions], sorted(saved),
            [type(t.grad_fn).__name__ for t in grads], raised(grads[0].sum().backward)]


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"attn_mask": "bool"}])
def test_sdpa_is_pytorchs_flash_node_without_a_double_backward(fresh, kw: dict) -> None:
    results = []
    for L in (torch, E):
        given = dict(kw)
        if given.get("attn_mask") == "bool":
            given["attn_mask"] = L.tensor(np.tril(np.ones((4, 4), bool)))
        results.append(_flash_structure(L, **given))
    assert results[1] == results[0]


ATTENTION_GRAPHS = {  # PyTorch's multi_head_attention_forward, node for node
    "self_attention": lambda L, x: L.nn.MultiheadAttention(8, 2)(x, x, x)[0],
    "no_weights": lambda L, x: L.nn.MultiheadAttention(8, 2)(x, x, x, need_weights=False)[0],
    "unbatched": lambda L, x: L.nn.MultiheadAttention(8, 2)(x[0], x[0], x[0])[0],
    "masked_scores": lambda L, x: L.nn.MultiheadAttention(8, 2)(x, x, x, attn_mask=L.ones(4, 4).triu(1).bool())[0],
    "masked_no_weights": lambda L, x: L.nn.MultiheadAttention(8, 2)(
        x, x, x, attn_mask=L.ones(4, 4).triu(1).bool(), need_weights=False)[0],
    "cross_attention": lambda L, x: L.nn.MultiheadAttention(8, 2)(x, x * 2, x * 2)[0],
    "encoder_layer": lambda L, x: L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)(x),
    "encoder_layer_batch_first": lambda L, x: L.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                           batch_first=True)(x),
}


@pytest.mark.parametrize("name", sorted(ATTENTION_GRAPHS))
def test_attention_graphs_are_pytorchs(fresh, name: str) -> None:
    from agreement import assert_agrees, assert_same_graph

    def build(L, x):
        L.manual_seed(0)
        return ATTENTION_GRAPHS[name](L, x)

    assert_same_graph(E, torch, build, [(4, 2, 8)], seed=3)
    assert_agrees(E, torch, build, [(4, 2, 8)], seed=3)
