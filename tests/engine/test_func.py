"""torch.func (grad, grad_and_value, vmap, functional_call) against PyTorch: per-sample
gradients, MAML-style gradients that stay differentiable in the outer parameters,
pytrees of parameters, auxiliary outputs, and the errors PyTorch raises."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E
from tapelint_engine.errors import NotSupportedByEngine

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 1)).astype(np.float32)


def _model(L):
    L.manual_seed(1)
    return L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Tanh(), L.nn.Linear(3, 1))


def _per_sample_grads(L) -> list[np.ndarray]:
    """The torch.func tutorial's recipe: vmap(grad(loss of functional_call)) over a batch."""
    model = _model(L)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = L.func.functional_call(model, p, (x.unsqueeze(0),))
        return L.nn.functional.mse_loss(out, y.unsqueeze(0))

    grads = L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, L.tensor(X), L.tensor(Y))
    return [grads[k].numpy() for k in sorted(grads)]


def test_per_sample_gradients_agree() -> None:
    E.manual_seed(0)
    got, want = _per_sample_grads(E), _per_sample_grads(torch)
    assert [g.shape for g in got] == [w.shape for w in want] and got[0].shape[0] == 6
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def _maml(L) -> list[np.ndarray]:
    """An inner gradient step taken with torch.func.grad, then an outer loss backpropagated
    through it into the original parameters (second order)."""
    model = _model(L)
    params = dict(model.named_parameters())

    def inner(p, x, y):
        return L.nn.functional.mse_loss(L.func.functional_call(model, p, (x,)), y)

    g = L.func.grad(inner)(params, L.tensor(X[:3]), L.tensor(Y[:3]))
    adapted = {k: params[k] - 0.1 * g[k] for k in params}
    outer = inner(adapted, L.tensor(X[3:]), L.tensor(Y[3:]))
    outer.backward()
    return [outer.detach().numpy()] + [p.grad.numpy() for _, p in sorted(model.named_parameters())]


def test_grad_stays_differentiable_in_outer_parameters() -> None:
    for g, w in zip(_maml(E), _maml(torch)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def _small(L) -> list:
    x = L.tensor(X[0])
    w = L.tensor(X[1], requires_grad=True)

    def f(a, b):
        return (a * b.sin()).sum(), a.exp()

    (ga, gb), (value, aux) = L.func.grad_and_value(f, argnums=(0, 1), has_aux=True)(x, w)
    only = L.func.grad(lambda a: (a ** 3).sum())(x)
    unused = L.func.grad(lambda a, b: (b * 2).sum())(x, w)
    return [ga.numpy() if not ga.requires_grad else ga.detach().numpy(), gb.detach().numpy(), value.item(),
            aux.numpy(), only.numpy(), unused.numpy(), ga.requires_grad, only.requires_grad, value.requires_grad]


def test_argnums_aux_and_what_requires_grad() -> None:
    got, want = _small(E), _small(torch)
    for g, w in zip(got[:6], want[:6]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
    assert got[6:] == want[6:]


@pytest.mark.parametrize("out_dims", [0, 1])
def test_vmap_of_a_plain_function_and_out_dims(out_dims: int) -> None:
    results = []
    for L in (E, torch):
        a = L.tensor(X, requires_grad=True)
        y = L.vmap(lambda r, s: (r @ s.t()).tanh().sum() * r, in_dims=(0, None), out_dims=out_dims)(a, L.tensor(X[:2]))
        y.sum().backward()
        results.append((y.detach().numpy(), a.grad.numpy()))
    for g, w in zip(*results):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_errors_are_pytorchs() -> None:
    for L in (E, torch):
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
            L.func.grad(lambda a: a * 2)(L.ones(3))
        with pytest.raises(ValueError, match="in_dims is not compatible"):
            L.vmap(lambda a, b: a + b, in_dims=(0,))(L.ones(2), L.ones(2))


def test_transforms_are_refused_under_strict_semantics(fresh) -> None:
    fresh("strict")
    with pytest.raises(NotSupportedByEngine, match="torch.func.grad under strict semantics"):
        E.func.grad(lambda a: a.sum())(E.ones(2))
    with pytest.raises(NotSupportedByEngine, match="torch.func.jacrev under strict semantics"):
        E.func.jacrev(lambda a: a * 2)(E.ones(2))
    with pytest.raises(NotSupportedByEngine, match="torch.func.vjp under strict semantics"):
        E.func.vjp(lambda a: a * 2, E.ones(2))
    with pytest.raises(NotSupportedByEngine, match="torch.func.linearize"):
        getattr(E.func, "linearize")  # noqa: B009 - the attribute access is the call under test


# ------------------------------------------------------ vjp, jvp, jacobians

W = RNG.standard_normal((2, 4)).astype(np.float32)


def _f(x, w):
    return (w @ x.sin()).tanh()


def _flat(value) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _flat(value[k])]
    return [np.asarray(value.detach().tolist())]


TRANSFORMS = {
    "jacrev": lambda L, x, w: L.func.jacrev(_f)(x, w),
    "jacrev_argnums": lambda L, x, w: L.func.jacrev(_f, argnums=(0, 1))(x, w),
    "jacrev_dict_out": lambda L, x, w: L.func.jacrev(lambda a: {"s": a.sin(), "e": (a * w).exp()})(x),
    "jacrev_aux": lambda L, x, w: L.func.jacrev(lambda a: (a.exp(), a.sum()), has_aux=True)(x),
    "jacfwd": lambda L, x, w: L.func.jacfwd(_f, argnums=1)(x, w),
    "jacfwd_pytree_in": lambda L, x, w: L.func.jacfwd(lambda p: p["a"] * p["b"].cos())({"a": x, "b": x * 2}),
    "hessian": lambda L, x, w: L.func.hessian(lambda a: (a.sin() * a).sum() + (a[0] * a[1]) ** 2)(x),
    "hessian_argnums": lambda L, x, w: L.func.hessian(lambda a, b: (_f(a, b) ** 2).sum(), argnums=1)(x, w),
    "vjp": lambda L, x, w: (lambda o, fn: (o, fn(L.ones(2) * 0.5)))(*L.func.vjp(_f, x, w)),
    "vjp_twice": lambda L, x, w: (lambda o, fn: (fn(L.ones(2)), fn(L.tensor([1.0, -2.0]))))(*L.func.vjp(_f, x, w)),
    "jvp": lambda L, x, w: L.func.jvp(_f, (x, w), (L.ones(4), L.ones(2, 4) * 0.3)),
    "jvp_aux": lambda L, x, w: L.func.jvp(lambda a: (a.exp() * a, a.sum()), (x,), (x.cos(),), has_aux=True),
    "hvp_by_jvp_of_grad": lambda L, x, w: L.func.jvp(L.func.grad(lambda a: (a.sin() ** 2).sum()), (x,),
                                                     (L.ones(4),)),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_values_are_pytorchs(name: str) -> None:
    got, want = (_flat(TRANSFORMS[name](L, L.tensor(X[0]), L.tensor(W))) for L in (E, torch))
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def _outer_backward(L, name: str) -> list:
    """A transform of a function of outer parameters: its result stays differentiable in
    them (PyTorch's functorch levels); the second backward through it fails as PyTorch's."""
    x, w = L.tensor(X[0]), L.tensor(W, requires_grad=True)
    result = _flat_tensors(TRANSFORMS[name](L, x, w))
    tracked = [r.requires_grad for r in result]
    loss = sum((r ** 2).sum() for r in result if r.requires_grad)
    if not any(tracked):
        return [tracked]
    loss.backward()
    return [tracked, raised(loss.backward).split(".")[0], np.asarray(w.grad.tolist())]


def _flat_tensors(value) -> list:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat_tensors(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _flat_tensors(value[k])]
    return [value]


@pytest.mark.parametrize("name", ["jacrev", "jacrev_argnums", "jacrev_dict_out", "jacfwd", "hessian", "hessian_argnums",
                                  "vjp", "jvp"])
def test_transforms_of_outer_parameters_backpropagate_as_pytorchs(name: str) -> None:
    got, want = _outer_backward(E, name), _outer_backward(torch, name)
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
