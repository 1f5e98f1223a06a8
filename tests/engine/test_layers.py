"""Convolution, pooling and batch norm against real PyTorch: forward values, gradients
(rtol 1e-4), second-order gradients through a convolution, module parameters,
running statistics and buffer versions."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import assert_agrees, assert_same_graph  # tests/engine/agreement.py

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")


def F(L):
    return L.nn.functional


CASES = {
    "conv2d_strided_dilated_grouped": (lambda L, x, w, b: F(L).conv2d(x, w, b, stride=2, padding=1,
                                                                      dilation=2, groups=2),
                                       [(2, 4, 9, 8), (6, 2, 3, 3), (6,)]),
    "conv2d_same": (lambda L, x, w: F(L).conv2d(x, w, padding="same"), [(1, 2, 6, 6), (3, 2, 3, 3)]),
    "conv2d_unbatched": (lambda L, x, w: F(L).conv2d(x, w), [(2, 5, 5), (3, 2, 2, 2)]),
    "conv1d": (lambda L, x, w, b: F(L).conv1d(x, w, b, padding=2, stride=2), [(2, 3, 7), (5, 3, 3), (5,)]),
    "conv1d_grouped": (lambda L, x, w: F(L).conv1d(x, w, groups=3, dilation=2), [(2, 3, 9), (6, 1, 2)]),
    "conv_transpose2d": (lambda L, x, w, b: F(L).conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                  output_padding=1, groups=2),
                         [(2, 4, 5, 5), (4, 3, 3, 3), (6,)]),
    "conv_transpose1d": (lambda L, x, w: F(L).conv_transpose1d(x, w, stride=3), [(2, 2, 4), (2, 3, 2)]),
    "max_pool2d": (lambda L, x: F(L).max_pool2d(x, 3, 2, padding=1), [(2, 3, 7, 7)]),
    "max_pool1d": (lambda L, x: F(L).max_pool1d(x, 2), [(2, 3, 8)]),
    "avg_pool2d": (lambda L, x: F(L).avg_pool2d(x, 2), [(2, 3, 8, 8)]),
    "avg_pool2d_padded": (lambda L, x: F(L).avg_pool2d(x, 3, 2, 1), [(2, 3, 7, 7)]),
    "avg_pool1d": (lambda L, x: F(L).avg_pool1d(x, 3, 1), [(2, 3, 8)]),
    "adaptive_avg_pool2d": (lambda L, x: F(L).adaptive_avg_pool2d(x, 2), [(2, 3, 8, 8)]),
    "adaptive_avg_pool2d_1": (lambda L, x: F(L).adaptive_avg_pool2d(x, (1, 1)), [(2, 3, 8, 8)]),
    "batch_norm_train": (lambda L, x, w, b: F(L).batch_norm(x, L.zeros(3), L.ones(3), w, b, True),
                         [(4, 3, 5, 5), (3,), (3,)]),
    "batch_norm_eval": (lambda L, x, w, b: F(L).batch_norm(x, L.zeros(3) + 0.2, L.ones(3) * 2, w, b,
                                                           False), [(4, 3), (3,), (3,)]),
    "batch_norm_no_affine": (lambda L, x: F(L).batch_norm(x, None, None, training=True), [(5, 2, 3)]),
    "conv3d": (lambda L, x, w, b: F(L).conv3d(x, w, b, stride=(1, 2, 1), padding=1, dilation=(2, 1, 1)),
               [(2, 3, 6, 7, 5), (4, 3, 3, 2, 3), (4,)]),
    "conv3d_grouped_unbatched": (lambda L, x, w: F(L).conv3d(x, w, groups=2), [(4, 4, 4, 4), (2, 2, 2, 3, 2)]),
    "conv_transpose3d": (lambda L, x, w, b: F(L).conv_transpose3d(x, w, b, stride=2, padding=1,
                                                                  output_padding=(1, 0, 1)),
                         [(2, 2, 3, 4, 3), (2, 3, 3, 3, 2), (3,)]),
    "max_pool3d": (lambda L, x: F(L).max_pool3d(x, 2, padding=(1, 0, 1)), [(2, 3, 5, 6, 5)]),
    "max_pool3d_ceil": (lambda L, x: F(L).max_pool3d(x, 2, 2, ceil_mode=True), [(1, 2, 5, 5, 4)]),
    "avg_pool3d": (lambda L, x: F(L).avg_pool3d(x, (2, 3, 2), 1, (1, 1, 0)), [(2, 3, 4, 5, 4)]),
    "adaptive_avg_pool3d": (lambda L, x: F(L).adaptive_avg_pool3d(x, (2, 1, 3)), [(2, 3, 4, 5, 6)]),
    "adaptive_avg_pool3d_1": (lambda L, x: F(L).adaptive_avg_pool3d(x, 1), [(2, 3, 4, 5, 6)]),
    "batch_norm_3d": (lambda L, x, w, b: F(L).batch_norm(x, L.zeros(3), L.ones(3), w, b, True),
                      [(2, 3, 3, 2, 4), (3,), (3,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_agrees_with_pytorch(fresh, name: str) -> None:
    fn, shapes = CASES[name]
    assert_agrees(E, torch, fn, shapes, seed=len(name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_layer_builds_pytorchs_graph(fresh, name: str) -> None:
    """Node classes, saved tensors (through saved_tensors_hooks) and the second-backward
    outcome, against PyTorch run now (the 3-D layers are not in the measured file)."""
    fn, shapes = CASES[name]
    assert_same_graph(E, torch, fn, shapes, seed=len(name))


@pytest.mark.parametrize("transposed", [False, True])
def test_second_order_through_convolution(fresh, transposed: bool) -> None:
    """Gradient penalties differentiate the input gradient: conv's backward is recorded."""
    rng = np.random.default_rng(1)
    xa = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
    wa = rng.standard_normal((2, 3, 3, 3) if transposed else (3, 2, 3, 3)).astype(np.float32)
    results = []
    for L in (torch, E):
        x, w = L.tensor(xa, requires_grad=True), L.tensor(wa, requires_grad=True)
        conv = F(L).conv_transpose2d if transposed else F(L).conv2d
        y = conv(x, w, padding=1).tanh().sum()
        gx, = L.autograd.grad(y, x, create_graph=True)
        (gx ** 2).sum().backward()
        results.append((w.grad.numpy().copy(), x.grad.numpy().copy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make, shape", [
    (lambda L: L.nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 8, 8)),
    (lambda L: L.nn.Conv1d(2, 4, 5, groups=2), (2, 2, 9)),
    (lambda L: L.nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1), (1, 4, 3, 3)),
    (lambda L: L.nn.BatchNorm2d(3), (4, 3, 2, 2)),
    (lambda L: L.nn.BatchNorm1d(3), (4, 3)),
    (lambda L: L.nn.MaxPool2d(2), (1, 2, 4, 4)),
    (lambda L: L.nn.AvgPool2d(2, 1), (1, 2, 4, 4)),
    (lambda L: L.nn.AdaptiveAvgPool2d((1, 1)), (1, 2, 4, 4)),
    (lambda L: L.nn.Conv3d(2, 4, (3, 3, 2), stride=2, padding=1), (2, 2, 5, 6, 4)),
    (lambda L: L.nn.Conv3d(2, 2, 3, padding=1, padding_mode="replicate"), (1, 2, 4, 4, 4)),
    (lambda L: L.nn.ConvTranspose3d(4, 2, 2, stride=2), (1, 4, 2, 3, 2)),
    (lambda L: L.nn.BatchNorm3d(3), (4, 3, 2, 2, 2)),
    (lambda L: L.nn.MaxPool3d(2), (1, 2, 4, 4, 4)),
    (lambda L: L.nn.AvgPool3d(2, 1), (1, 2, 4, 4, 4)),
    (lambda L: L.nn.AdaptiveAvgPool3d((1, 2, 2)), (1, 2, 4, 4, 4)),
])
def test_modules_agree(fresh, make, shape) -> None:
    theirs, ours = make(torch), make(E)
    names = [n for n, _ in theirs.named_parameters()]
    assert names == [n for n, _ in ours.named_parameters()]
    for (_, p), (_, q) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert tuple(p.shape) == tuple(q.shape) and p._version == q._version
        q.arr[...] = p.detach().numpy()
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    for _ in range(2):  # twice: running statistics move
        yt, ye = theirs(torch.tensor(x)), ours(E.tensor(x))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    for (n, b), (_, c) in zip(theirs.named_buffers(), ours.named_buffers()):
        np.testing.assert_allclose(c.numpy(), b.numpy(), rtol=1e-5, err_msg=n)
        assert c._version == b._version, n
    theirs.eval(), ours.eval()
    np.testing.assert_allclose(ours(E.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_conv_weight_bound_matches_pytorch_init(fresh) -> None:
    """kaiming_uniform_(a=sqrt(5)): every weight within 1/sqrt(fan_in)."""
    conv = E.nn.Conv2d(3, 8, 3)
    bound = 1 / np.sqrt(3 * 9)
    w = np.abs(conv.weight.detach().numpy())
    assert bound / 2 < w.max() <= bound


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", ["2d", "offsets", "last_offset"])
def test_embedding_bag_agrees(fresh, mode: str, layout: str) -> None:
    results = []
    for L in (torch, E):
        bag = L.nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=layout == "last_offset")
        bag.weight.data = L.tensor(np.arange(30, dtype=np.float32).reshape(10, 3) / 7 - 2)
        bag.weight.requires_grad_(True)
        if layout == "2d":
            out = bag(L.tensor([[1, 2, 4], [4, 3, 9]]))
        else:
            offsets = [0, 2, 2, 5] + ([6] if layout == "last_offset" else [])
            out = bag(L.tensor([1, 2, 4, 5, 4, 3]), L.tensor(offsets))
        (out * out).sum().backward()
        results.append((out.detach().numpy().copy(), bag.weight.grad.numpy().copy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make, shape", [
    (lambda L: L.nn.MaxPool2d(2, return_indices=True), (2, 3, 6, 5)),
    (lambda L: L.nn.MaxPool2d(3, 2, padding=1, return_indices=True, ceil_mode=True), (1, 2, 7, 6)),
    (lambda L: L.nn.MaxPool1d(3, 2, return_indices=True), (2, 3, 9)),
    (lambda L: L.nn.MaxPool3d(2, return_indices=True), (1, 2, 4, 4, 5)),
    (lambda L: L.nn.MaxPool2d(2, return_indices=True), (3, 4, 4)),  # unbatched
])
def test_max_pool_returns_pytorchs_indices(fresh, make, shape) -> None:
    """The indices a SegNet-style decoder unpools with: each winner's flat position in
    its input plane, int64, shaped like the output; the values stay differentiable."""
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    results = []
    for L in (torch, E):
        t = L.tensor(x, requires_grad=True)
        out, idx = make(L)(t)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), idx.numpy(), str(idx.dtype), t.grad.numpy()))
    (ev, ei, ed, eg), (tv, ti, td, tg) = results[1], results[0]
    np.testing.assert_allclose(ev, tv, rtol=1e-6)
    np.testing.assert_array_equal(ei, ti)
    assert ed == td == "torch.int64"
    np.testing.assert_allclose(eg, tg, rtol=1e-6)
