"""torch.distributions against PyTorch: log_prob, entropy, rsample gradients, KL, the
lazily cached logits/probs (and the graph reuse they cause), sample shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tapelint_engine import facade as E
from tapelint_engine.errors import NotSupportedByEngine

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
LOC = RNG.standard_normal((4, 3)).astype(np.float32)
RAW = RNG.standard_normal((4, 3)).astype(np.float32)
VALUE = RNG.standard_normal((4, 3)).astype(np.float32)
UNIT = (RNG.random((4, 3)) * 0.8 + 0.1).astype(np.float32)

CASES = {
    "normal": lambda D, L, a, b: (D.Normal(a, b.exp()).log_prob(L.tensor(VALUE)).sum()
                                  + D.Normal(a, b.exp()).entropy().sum()),
    "normal_scalar_scale": lambda D, L, a, b: D.Normal(a, 0.5).log_prob(b).sum(),
    "normal_cdf": lambda D, L, a, b: D.Normal(a, b.exp()).cdf(L.tensor(VALUE)).sum(),
    "categorical_logits": lambda D, L, a, b: (D.Categorical(logits=a).log_prob(L.tensor([0, 2, 1, 1])).sum()
                                              + D.Categorical(logits=a).entropy().sum()),
    "categorical_probs": lambda D, L, a, b: (D.Categorical(probs=b.exp()).log_prob(L.tensor([2, 0, 0, 1])).sum()
                                             + D.Categorical(probs=b.exp()).entropy().sum()),
    "bernoulli_logits": lambda D, L, a, b: (D.Bernoulli(logits=a).log_prob(L.tensor(UNIT.round())).sum()
                                            + D.Bernoulli(logits=a).entropy().sum()),
    "bernoulli_probs": lambda D, L, a, b: (D.Bernoulli(probs=b.sigmoid()).log_prob(L.tensor(UNIT.round())).sum()
                                           + D.Bernoulli(probs=b.sigmoid()).entropy().sum()),
    "mvn_diag_cov": lambda D, L, a, b: (D.MultivariateNormal(a, L.diag_embed(b.exp())).log_prob(L.tensor(VALUE)).sum()
                                        + D.MultivariateNormal(a, L.diag_embed(b.exp())).entropy().sum()),
    "mvn_scale_tril": lambda D, L, a, b: D.MultivariateNormal(a[0], scale_tril=L.diag(b[0].exp())).log_prob(
        L.tensor(VALUE[1])),
    "beta": lambda D, L, a, b: (D.Beta(a.exp(), b.exp()).log_prob(L.tensor(UNIT)).sum()
                                + D.Beta(a.exp(), b.exp()).entropy().sum()),
    "kl_normal": lambda D, L, a, b: D.kl_divergence(D.Normal(a, b.exp()), D.Normal(b, a.exp())).sum(),
    "kl_categorical": lambda D, L, a, b: D.kl_divergence(D.Categorical(logits=a), D.Categorical(logits=b)).sum(),
    "uniform": lambda D, L, a, b: (D.Uniform(a, a + b.exp()).log_prob(a + b.exp() * L.tensor(UNIT)).sum()
                                   + D.Uniform(a, a + b.exp()).entropy().sum()
                                   + D.Uniform(a, a + b.exp()).variance.sum()),
    "independent_normal": lambda D, L, a, b: (D.Independent(D.Normal(a, b.exp()), 1).log_prob(L.tensor(VALUE)).sum()
                                              + D.Independent(D.Normal(a, b.exp()), 1).entropy().sum()),
    "gamma": lambda D, L, a, b: (D.Gamma(a.exp(), b.exp()).log_prob(L.tensor(UNIT * 3)).sum()
                                 + D.Gamma(a.exp(), b.exp()).entropy().sum()
                                 + (D.Gamma(a.exp(), b.exp()).variance + D.Gamma(a.exp(), b.exp()).mean).sum()),
    "gamma_scalar_rate": lambda D, L, a, b: D.Gamma(a.exp() + 1, 2.0).log_prob(b.exp()).sum(),
    "gamma_mode": lambda D, L, a, b: D.Gamma(a.exp() + 0.5, b.exp()).mode.sum(),
    "dirichlet": lambda D, L, a, b: (D.Dirichlet(a.exp()).log_prob(L.tensor(UNIT / UNIT.sum(-1, keepdims=True))).sum()
                                     + D.Dirichlet(a.exp()).entropy().sum()
                                     + (D.Dirichlet(b.exp()).variance * D.Dirichlet(b.exp()).mean).sum()),
    "dirichlet_value_grad": lambda D, L, a, b: D.Dirichlet(a.exp()).log_prob(b.softmax(-1)).sum(),
    "poisson": lambda D, L, a, b: (D.Poisson(a.exp()).log_prob(L.tensor(np.round(UNIT * 5))).sum()
                                   + (D.Poisson(b.exp()).mean * D.Poisson(b.exp()).variance).sum()),
    "lognormal": lambda D, L, a, b: (D.LogNormal(a, b.exp()).log_prob(L.tensor(UNIT * 2)).sum()
                                     + D.LogNormal(a, b.exp()).entropy().sum()
                                     + (D.LogNormal(a, b.exp()).mean + D.LogNormal(a, b.exp()).variance * 0.01
                                        + D.LogNormal(a, b.exp()).mode).sum()),
    "lognormal_value_grad": lambda D, L, a, b: D.LogNormal(0.5, 2.0).log_prob(b.exp()).sum(),
    "transformed_affine_sigmoid": lambda D, L, a, b: D.TransformedDistribution(
        D.Normal(a, b.exp()), [D.transforms.AffineTransform(1.0, 2.0), D.transforms.SigmoidTransform()]).log_prob(
        L.tensor(UNIT)).sum(),
    "transformed_tensor_affine": lambda D, L, a, b: D.TransformedDistribution(
        D.Normal(a, 1.0), D.AffineTransform(a * 0.5, b.exp())).log_prob(L.tensor(VALUE)).sum(),
    "transformed_tanh": lambda D, L, a, b: D.TransformedDistribution(
        D.Normal(a, b.exp()), [D.transforms.TanhTransform()]).log_prob(L.tensor(UNIT * 1.6 - 0.8)).sum(),
    "xlogy": lambda D, L, a, b: L.xlogy(a * (a > 0), b.exp()).sum() + a.xlogy(b.exp()).sum(),
}


def _run(L, name):
    a, b = L.tensor(LOC, requires_grad=True), L.tensor(RAW, requires_grad=True)
    out = CASES[name](L.distributions, L, a, b)
    out.backward()
    return (out.item(),) + tuple(t.grad.numpy().copy() if t.grad is not None else None for t in (a, b))


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_agree(fresh, name: str) -> None:
    got, want = _run(E, name), _run(torch, name)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4)
    for g, w in zip(got[1:], want[1:]):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_seeded_uniform_and_independent_samples_are_pytorchs(fresh) -> None:
    values = []
    for L in (E, torch):
        L.manual_seed(7)
        d = L.distributions
        values.append([d.Uniform(L.zeros(3), L.ones(3) * 2).rsample((2,)).tolist(),
                       d.Independent(d.Normal(L.zeros(2, 3), 1.0), 1).sample().tolist(),
                       tuple(d.Independent(d.Normal(L.zeros(2, 3), 1.0), 1).event_shape)])
    np.testing.assert_allclose(values[0][0], values[1][0], rtol=1e-6)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-6)
    assert values[0][2] == values[1][2] == (3,)


@pytest.mark.parametrize("make", [lambda L, x: L.distributions.Normal(x, 1.0),
                                  lambda L, x: L.distributions.MultivariateNormal(x, scale_tril=L.eye(3))])
def test_rsample_is_differentiable_sample_is_not(fresh, make) -> None:
    for L in (E, torch):
        x = L.zeros(2, 3, requires_grad=True)
        d = make(L, x)
        s = d.rsample((5,))
        assert tuple(s.shape) == (5, 2, 3) and s.requires_grad
        assert not d.sample((5,)).requires_grad
        s.sum().backward()
        assert x.grad.numpy().tolist() == [[5.0] * 3] * 2


def test_sample_shapes_and_dtypes(fresh) -> None:
    for L in (E, torch):
        D = L.distributions
        c = D.Categorical(logits=L.zeros(4, 3))
        assert tuple(c.sample().shape) == (4,) and c.sample().dtype == L.int64
        assert tuple(c.sample((2, 5)).shape) == (2, 5, 4)
        assert tuple(D.Bernoulli(probs=L.full((3,), 0.5)).sample((2,)).shape) == (2, 3)
        assert tuple(D.Beta(L.ones(2), L.ones(2)).sample().shape) == (2,)
        assert tuple(c.batch_shape) == (4,) and tuple(D.MultivariateNormal(
            L.zeros(2, 3), L.eye(3)).event_shape) == (3,)


def _cached_probs_reused(L) -> str:
    """An RL pattern: the lazily cached `probs` keeps the first loss's graph."""
    logits = L.tensor(LOC, requires_grad=True)
    dist = L.distributions.Categorical(logits=logits * 2)
    first = dist.probs
    assert dist.probs is first  # cached
    (dist.probs ** 2).sum().backward()
    try:
        dist.entropy().sum().backward()
    except RuntimeError as exc:
        return str(exc)[:40]
    return "ok"


def test_cached_attribute_carries_its_graph(fresh) -> None:
    assert _cached_probs_reused(E) == _cached_probs_reused(torch)
    assert _cached_probs_reused(torch) != "ok"


def test_categorical_sample_frequencies(fresh) -> None:
    probs = E.tensor([0.1, 0.6, 0.3])
    draws = E.distributions.Categorical(probs=probs).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20000, [0.1, 0.6, 0.3], atol=0.02)


def test_gamma_and_dirichlet_samples_and_rate_gradient(fresh) -> None:
    """Samples have PyTorch's shapes, support and moments; Gamma.rsample is
    differentiable in the rate as PyTorch's is (value = draw / rate)."""
    for L in (E, torch):
        L.manual_seed(0)
        D = L.distributions
        g = D.Gamma(L.full((2, 3), 2.5), L.full((3,), 2.0)).sample((4000,))
        d = D.Dirichlet(L.tensor([1.0, 2.0, 5.0])).sample((4000,))
        assert tuple(g.shape) == (4000, 2, 3) and tuple(d.shape) == (4000, 3) and not g.requires_grad
        np.testing.assert_allclose(g.mean().item(), 1.25, rtol=0.05)
        np.testing.assert_allclose(d.mean(0).numpy(), [0.125, 0.25, 0.625], atol=0.02)
        np.testing.assert_allclose(d.sum(-1).numpy(), 1.0, rtol=1e-5)
        rate = L.full((3,), 2.0, requires_grad=True)
        s = D.Gamma(L.full((3,), 3.0), rate).rsample()
        s.sum().backward()
        np.testing.assert_allclose(rate.grad.numpy(), -(s.detach() / rate.detach()).numpy(), rtol=1e-5)


def _names(t) -> list[str]:
    names, stack = [], [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is not None:
            names.append(type(node).__name__)
            stack.extend(n for n, _ in node.next_functions)
    return sorted(names)


def _gamma_rsample_gradients(L) -> list:
    """Concentrations in each branch of PyTorch's gradient (a draw below 0.8: Taylor
    series; above 8: saddle point, near and far from the mean; else the rational fit),
    float32 and float64, broadcast over a sample shape."""
    L.manual_seed(3)
    out = []
    for dtype in (L.float32, L.float64):
        a = L.tensor([0.05, 0.3, 0.9, 1.2, 2.5, 7.0, 12.0, 40.0], dtype=dtype, requires_grad=True)
        r = L.tensor([1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 0.7, 1.0], dtype=dtype, requires_grad=True)
        x = L.distributions.Gamma(a, r).rsample((3,))
        (x * L.arange(1.0, 4.0, dtype=dtype).unsqueeze(1)).sum().backward()
        out += [x.detach().numpy(), a.grad.numpy(), r.grad.numpy(), _names(x)]
    return out


def _assert_same(got: list, want: list, **tolerance: float) -> None:
    """Lists (node names, shapes) equal, arrays close."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            assert g == w
        else:
            np.testing.assert_allclose(g, w, **tolerance)


def test_gamma_rsample_is_differentiable_in_the_concentration_as_pytorchs(fresh) -> None:
    _assert_same(_gamma_rsample_gradients(E), _gamma_rsample_gradients(torch), rtol=1e-5)
    a = E.ones(3, requires_grad=True)
    x = E.distributions.Gamma(a, 1.0).rsample()
    with pytest.raises(NotSupportedByEngine, match="create_graph"):
        E.autograd.grad(x.sum(), a, create_graph=True)


def _dirichlet_beta_rsample_gradients(L) -> list:
    """Seeded Dirichlet and Beta draws and their gradients in the concentrations, with
    concentrations that reach each branch of PyTorch's `_dirichlet_grad` (a part near 0,
    a part near 1, both Beta parameters above 6, the rational fit), float32 and float64."""
    out = []
    for dtype in (L.float32, L.float64):
        L.manual_seed(5)
        c = L.tensor([[0.1, 0.3, 0.2], [0.5, 2.0, 7.0], [9.0, 12.0, 30.0], [1.5, 0.05, 4.0]], dtype=dtype,
                     requires_grad=True)
        packed: list[tuple] = []

        def pack(t, packed=packed):
            packed.append(tuple(t.shape))
            return t

        with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            x = L.distributions.Dirichlet(c).rsample((2,))
        (x * L.arange(1.0, 4.0, dtype=dtype)).sum().backward()
        a = L.tensor([0.4, 2.0, 9.0, 50.0, 1.2], dtype=dtype, requires_grad=True)
        b = L.tensor([3.0, 0.3, 8.0, 60.0, 1.1], dtype=dtype, requires_grad=True)
        beta = L.distributions.Beta(a, b)
        y = beta.rsample((3,))
        (y * L.arange(1.0, 4.0, dtype=dtype).unsqueeze(1)).sum().backward()
        z = L.distributions.Beta(a, 2.0).rsample()
        out += [x.detach().numpy(), c.grad.numpy(), _names(x), packed, y.detach().numpy(), a.grad.numpy(),
                b.grad.numpy(), _names(y), _names(z), beta.log_prob(y.detach()).detach().numpy(),
                beta.entropy().detach().numpy(), beta.mean.detach().numpy()]
    return out


def test_dirichlet_and_beta_rsample_gradients_are_pytorchs(fresh) -> None:
    _assert_same(_dirichlet_beta_rsample_gradients(E), _dirichlet_beta_rsample_gradients(torch), rtol=1e-4,
                 atol=1e-7)


def test_dirichlet_rsample_backward_is_once_differentiable(fresh) -> None:
    c = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = E.distributions.Dirichlet(c).rsample()
    (g,) = E.autograd.grad(x[0], c, create_graph=True)  # a constant, as PyTorch's
    assert not g.requires_grad
    w = E.ones(3, requires_grad=True)
    x = E.distributions.Dirichlet(c).rsample()
    with pytest.raises(NotSupportedByEngine, match="once-differentiable"):
        E.autograd.grad((x * w).sum() ** 2, c, create_graph=True)


def _seeded_transformed_rsample(L) -> list:
    """rsample pushes the base's draw (PyTorch's normal stream) through the transforms."""
    L.manual_seed(3)
    loc = L.tensor(LOC, requires_grad=True)
    d = L.distributions
    squashed = d.TransformedDistribution(d.Normal(loc, 0.5), [d.transforms.TanhTransform()]).rsample((2,))
    log_normal = d.LogNormal(loc, 0.3).rsample()
    (squashed.sum() + log_normal.sum()).backward()
    return [squashed.detach().numpy(), log_normal.detach().numpy(), loc.grad.numpy()]


def test_seeded_transformed_rsample_and_gradient_are_pytorchs(fresh) -> None:
    for got, want in zip(_seeded_transformed_rsample(E), _seeded_transformed_rsample(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_poisson_samples_and_undefined_entropy(fresh) -> None:
    for L in (E, torch):
        d = L.distributions.Poisson(L.full((2, 3), 4.0))
        sample = d.sample((5,))
        assert tuple(sample.shape) == (5, 2, 3) and sample.dtype == L.float32 and not sample.requires_grad
        assert (sample.numpy() >= 0).all() and (sample.numpy() == np.round(sample.numpy())).all()
        with pytest.raises(NotImplementedError):
            d.entropy()
        with pytest.raises(NotImplementedError):
            L.distributions.TransformedDistribution(L.distributions.Normal(0.0, 1.0),
                                                    [L.distributions.ExpTransform()]).entropy()
