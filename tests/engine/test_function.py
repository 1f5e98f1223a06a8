"""Custom `torch.autograd.Function` against PyTorch: gradients, saved tensors freed by a
backward (second backward fails), in-place changes caught, create_graph."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")


def functions(L):
    class Exp(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ScaledMul(L.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, scale):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return a * b * scale

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            ga = g * b * ctx.scale if ctx.needs_input_grad[0] else None
            return ga, g * a * ctx.scale, None

    class Clip(L.autograd.Function):  # saves nothing: a second backward is fine
        @staticmethod
        def forward(ctx, x):
            return x.clamp(-1, 1)

        @staticmethod
        def backward(ctx, g):
            return g

    return Exp, ScaledMul, Clip


def _grads(L):
    Exp, ScaledMul, Clip = functions(L)
    a = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
    b = L.tensor([1.5, 0.25, -0.5], requires_grad=True)
    loss = (Exp.apply(a) * ScaledMul.apply(a, b, 3.0) + Clip.apply(b * 2)).sum()
    loss.backward()
    return a.grad.numpy().copy(), b.grad.numpy().copy()


def test_gradients_agree(fresh) -> None:
    for got, want in zip(_grads(E), _grads(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def _second_backward(L, which: int) -> str:
    fn = functions(L)[which]
    x = L.tensor([0.5, 1.0], requires_grad=True)
    out = fn.apply(x) if which != 1 else fn.apply(x, x * 1, 2.0)
    loss = out.sum()
    loss.backward()
    return raised(loss.backward).split(".")[0]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_saved_tensors_are_freed_like_any_saved_tensor(fresh, which: int) -> None:
    assert _second_backward(E, which) == _second_backward(torch, which)


def test_second_backward_fails_where_saved_tensors_are_read(fresh) -> None:
    """PyTorch raises inside the user's backward, at `ctx.saved_tensors`."""
    import traceback

    lines = []
    for L in (E, torch):
        Exp = functions(L)[0]
        loss = Exp.apply(L.tensor([0.5], requires_grad=True)).sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="second time") as info:
            loss.backward()
        frames = [f for f in traceback.extract_tb(info.tb) if f.filename == __file__]
        lines.append(frames[-1].line)
    assert lines[0] == lines[1] == "(y,) = ctx.saved_tensors"


def test_inplace_change_of_a_saved_tensor(fresh) -> None:
    messages = []
    for L in (E, torch):
        Exp = functions(L)[0]
        x = L.tensor([0.5, 1.0], requires_grad=True)
        y = Exp.apply(x)
        z = y * 1
        y.add_(1)
        with pytest.raises(RuntimeError) as info:
            z.sum().backward()
        messages.append(str(info.value).split(" is at version")[1])
    assert messages[0] == messages[1]


def test_create_graph_through_a_function(fresh) -> None:
    results = []
    for L in (E, torch):
        Exp = functions(L)[0]
        x = L.tensor([0.5, 1.0], requires_grad=True)
        (g,) = L.autograd.grad(Exp.apply(x * x).sum(), x, create_graph=True)
        g.sum().backward()
        results.append(x.grad.numpy().copy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)


def test_import_path_and_wrong_gradient_count(fresh) -> None:
    from tapelint_engine.facade.function import Function, once_differentiable

    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(E.ones(2, requires_grad=True), E.ones(2)).sum().backward()


def _several_outputs(L, use_cos: bool, twice: bool) -> list:
    class SinCos(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x.sin() * k, x.cos(), (x > 0).long()

        @staticmethod
        def backward(ctx, g_sin, g_cos, g_sign):
            (x,) = ctx.saved_tensors
            return g_sin * x.cos() * ctx.k - g_cos * x.sin(), None

    x = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
    s, c, sign = SinCos.apply(x, 3.0)
    loss = (s * 2).sum() + ((c ** 2).sum() if use_cos else 0)
    loss.backward()
    out = [x.grad.numpy().copy(), sign.tolist(), type(s.grad_fn).__name__ if L is torch else None]
    if twice:
        try:
            loss.backward()
            out.append("ok")
        except RuntimeError:
            out.append("fails")
    return out


@pytest.mark.parametrize("use_cos, twice", [(True, False), (False, False), (True, True)])
def test_function_with_several_outputs_agrees(fresh, use_cos: bool, twice: bool) -> None:
    """An unused output's gradient reaches the backward as zeros; integer outputs are
    not differentiable; the saved input is freed by the first backward."""
    got, want = _several_outputs(E, use_cos, twice), _several_outputs(torch, use_cos, twice)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1] and got[3:] == want[3:]


def test_function_node_is_named_as_pytorch_names_it(fresh) -> None:
    names = []
    for L in (E, torch):
        Exp, _, _ = functions(L)
        names.append(type(Exp.apply(L.ones(2, requires_grad=True)).grad_fn).__name__)
    assert names == ["ExpBackward", "ExpBackward"]
