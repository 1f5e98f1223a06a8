"""Padding modes, interpolation, group and instance norm, convolution padding modes,
pooling with ceil_mode, F.unfold/F.fold:
values, first and second-order gradients, and the second-backward outcome agree with
PyTorch (interpolation saves nothing, pads save their input)."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import assert_agrees, assert_same_graph

from tapelint_engine import facade as E
from tapelint_engine.errors import NotSupportedByEngine

torch = pytest.importorskip("torch")

CASES = {
    "reflect_2d": (lambda L, x: L.nn.functional.pad(x, (1, 2, 2, 1), mode="reflect"), [(1, 2, 4, 5)]),
    "replicate_2d": (lambda L, x: L.nn.functional.pad(x, (2, 0, 1, 3), mode="replicate"), [(1, 2, 4, 5)]),
    "circular_2d": (lambda L, x: L.nn.functional.pad(x, (1, 1, 2, 0), mode="circular"), [(1, 2, 4, 5)]),
    "reflect_1d": (lambda L, x: L.nn.functional.pad(x, (3, 1), mode="reflect"), [(2, 3, 5)]),
    "constant_value": (lambda L, x: L.nn.functional.pad(x, (1, 1), value=2.5), [(2, 3)]),
    "nearest_scale": (lambda L, x: L.nn.functional.interpolate(x, scale_factor=2), [(1, 2, 3, 4)]),
    "nearest_size": (lambda L, x: L.nn.functional.interpolate(x, size=(5, 3)), [(1, 2, 3, 4)]),
    "bilinear": (lambda L, x: L.nn.functional.interpolate(x, size=(5, 7), mode="bilinear"), [(1, 2, 3, 4)]),
    "bilinear_corners": (lambda L, x: L.nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear",
                                                                  align_corners=True), [(2, 1, 4, 4)]),
    "bilinear_down": (lambda L, x: L.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear"), [(1, 1, 6, 5)]),
    "linear": (lambda L, x: L.nn.functional.interpolate(x, scale_factor=2.5, mode="linear"), [(1, 2, 4)]),
    "upsample_module": (lambda L, x: L.nn.Upsample(scale_factor=2, mode="bilinear")(x), [(1, 1, 2, 3)]),
    "group_norm": (lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b), [(2, 4, 3, 2), (4,), (4,)]),
    "group_norm_1d": (lambda L, x: L.nn.functional.group_norm(x, 3, eps=1e-3), [(2, 6, 5)]),
    "max_pool2d_ceil": (lambda L, x: L.nn.functional.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
                        [(1, 2, 5, 7)]),
    "max_pool1d_ceil": (lambda L, x: L.nn.MaxPool1d(2, ceil_mode=True)(x), [(1, 2, 7)]),
    "avg_pool2d_ceil_exact": (lambda L, x: L.nn.functional.avg_pool2d(x, 2, ceil_mode=True), [(1, 1, 4, 6)]),
    "unfold": (lambda L, x: L.nn.functional.unfold(x, (2, 3), padding=1, stride=(2, 1)), [(2, 3, 5, 4)]),
    "unfold_dilated": (lambda L, x: L.nn.functional.unfold(x, 2, dilation=2), [(1, 2, 5, 5)]),
    "fold": (lambda L, x: L.nn.functional.fold(x, (4, 5), 2, padding=1, stride=2), [(2, 12, 9)]),
    "instance_norm": (lambda L, x, w, b: L.nn.functional.instance_norm(x, weight=w, bias=b), [(2, 3, 4, 4), (3,), (3,)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_agree(fresh, name: str) -> None:
    fn, shapes = CASES[name]
    assert_agrees(E, torch, fn, shapes, seed=3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_backward_outcome_agrees(fresh, name: str) -> None:
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    outcomes = []
    for L in (E, torch):
        loss = fn(L, *[L.tensor(a, requires_grad=True) for a in arrays]).sum()
        loss.backward()
        try:
            loss.backward()
            outcomes.append("ok")
        except RuntimeError:
            outcomes.append("fails")
    assert outcomes[0] == outcomes[1]


def _second_order(L, fn, arrays):
    x = L.tensor(arrays[0], requires_grad=True)
    (g,) = L.autograd.grad((fn(L, x) ** 2).sum(), x, create_graph=True)
    (g * g).sum().backward()
    return x.grad.numpy().copy()


@pytest.mark.parametrize("name", ["reflect_2d", "bilinear", "nearest_scale", "unfold", "fold"])
def test_second_order_agrees(fresh, name: str) -> None:
    fn, shapes = CASES[name]
    arrays = [np.random.default_rng(1).standard_normal(shapes[0]).astype(np.float32)]
    np.testing.assert_allclose(_second_order(E, fn, arrays), _second_order(torch, fn, arrays), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_convolution_padding_modes_agree(fresh, mode: str) -> None:
    theirs = torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode)
    ours = E.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode)
    for p, q in zip(theirs.parameters(), ours.parameters()):
        q.arr[...] = p.detach().numpy()
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 4)).astype(np.float32)
    out_t, out_e = theirs(torch.tensor(x)), ours(E.tensor(x))
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    out_t.sum().backward()
    out_e.sum().backward()
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_avg_pool_partial_ceil_window_is_unsupported(fresh) -> None:
    with pytest.raises(NotSupportedByEngine, match="ceil_mode"):
        E.nn.functional.avg_pool2d(E.ones(1, 1, 5, 5), 2, ceil_mode=True)


def test_norm_modules_agree(fresh) -> None:
    x = np.random.default_rng(4).standard_normal((2, 4, 3, 3)).astype(np.float32)
    for name, args in (("GroupNorm", (2, 4)), ("InstanceNorm2d", (4,))):
        a, b = getattr(torch.nn, name)(*args), getattr(E.nn, name)(*args)
        np.testing.assert_allclose(b(E.tensor(x)).detach().numpy(), a(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)


def _interp(mode: str, **kw):
    return lambda L, x: L.nn.functional.interpolate(x, mode=mode, **kw)


RESAMPLE_CASES = {
    "bicubic_up": (_interp("bicubic", scale_factor=2), (2, 3, 4, 5)),
    "bicubic_down_aligned": (_interp("bicubic", size=(3, 4), align_corners=True), (1, 2, 7, 6)),
    "bicubic_odd": (_interp("bicubic", size=(5, 9)), (1, 2, 3, 4)),
    "trilinear": (_interp("trilinear", scale_factor=(2, 1.5, 2)), (1, 2, 3, 4, 2)),
    "trilinear_aligned": (_interp("trilinear", size=(2, 5, 3), align_corners=True), (1, 2, 3, 4, 2)),
    "nearest_3d": (_interp("nearest", size=(4, 3, 5)), (1, 2, 2, 3, 2)),
    "nearest_exact_up": (_interp("nearest-exact", scale_factor=1.5), (1, 2, 4, 6)),
    "nearest_exact_down_1d": (_interp("nearest-exact", size=3), (2, 2, 7)),
    "area_2d": (_interp("area", size=(3, 2)), (2, 3, 7, 5)),
    "area_1d": (_interp("area", size=4), (2, 3, 10)),
    "area_3d": (_interp("area", scale_factor=0.5), (1, 2, 4, 6, 4)),
    "adaptive_avg_pool2d_uneven": (lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (3, 5)), (2, 2, 7, 8)),
    "adaptive_avg_pool3d_uneven": (lambda L, x: L.nn.functional.adaptive_avg_pool3d(x, (2, 3, 2)), (1, 2, 5, 4, 3)),
}


@pytest.mark.parametrize("name", sorted(RESAMPLE_CASES))
def test_bicubic_trilinear_area_and_uneven_pooling_agree(fresh, name: str) -> None:
    """Values, gradients, node classes and saved tensors as PyTorch's, run now."""
    fn, shape = RESAMPLE_CASES[name]
    assert_agrees(E, torch, fn, [shape], seed=len(name))
    assert_same_graph(E, torch, fn, [shape], seed=len(name))
