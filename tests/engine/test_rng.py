"""The same numbers as PyTorch: after `manual_seed`, the engine's samplers and layer
initialisations produce PyTorch 2.13's CPU values (to float32 rounding)."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import mkl_on_intel

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

DRAWS = {
    "rand": lambda L: L.rand(5, 3),
    "rand_double": lambda L: L.rand(4, dtype=L.float64),
    "randn_small": lambda L: L.randn(7),
    "randn_vector": lambda L: L.randn(5, 7),
    "randn_block": lambda L: L.randn(32),
    "randn_then_randn": lambda L: L.cat([L.randn(3), L.randn(3), L.randn(20)]),
    "randn_like": lambda L: L.randn_like(L.zeros(2, 9)),
    "rand_like": lambda L: L.rand_like(L.zeros(3)),
    "randint": lambda L: L.randint(0, 10, (12,)).float(),
    "randint_offset": lambda L: L.randint(3, 1000, (2, 3)).float(),
    "randperm": lambda L: L.randperm(17).float(),
    "normal_sized": lambda L: L.normal(2.0, 0.5, size=(20,)),
    "normal_tensor": lambda L: L.normal(L.ones(3, 6), L.full((3, 6), 2.0)),
    "normal_": lambda L: L.zeros(4, 5).normal_(1.0, 3.0),
    "uniform_": lambda L: L.zeros(6).uniform_(-2.0, 5.0),
    "bernoulli_scalar": lambda L: L.zeros(30).bernoulli_(0.3),
    "bernoulli_tensor": lambda L: L.bernoulli(L.full((4, 6), 0.4)),
    "bernoulli_double": lambda L: L.bernoulli(L.rand(9, dtype=L.float64)),
    "bernoulli_distribution": lambda L: L.distributions.Bernoulli(probs=L.full((3, 4), 0.6)).sample((2,)),
    "dropout_mask": lambda L: L.nn.functional.dropout(L.ones(5, 8), 0.25),
    # the mask keeps the input's memory layout: drawn in storage order (an attention
    # output transposed back to batch_first is dropped so)
    "dropout_transposed": lambda L: L.nn.functional.dropout(L.arange(24.0).reshape(4, 6).t(), 0.4),
    "dropout_permuted": lambda L: L.nn.functional.dropout(L.arange(60.0).reshape(3, 4, 5).permute(1, 2, 0), 0.3),
    "multinomial": lambda L: L.multinomial(L.tensor([[0.1, 0.6, 0.3], [2.0, 1.0, 1.0]]), 7, True).float(),
    "multinomial_one": lambda L: L.multinomial(L.tensor([[0.1, 0.6, 0.3, 0.2], [1.0, 0.0, 2.0, 1.0]]), 1).float(),
    "multinomial_without": lambda L: L.multinomial(L.tensor([0.1, 0.6, 0.3, 0.2, 0.5]), 3).float(),
    "categorical_one": lambda L: L.stack([L.distributions.Categorical(logits=L.randn(3, 4)).sample()
                                          for _ in range(3)]).float(),
    "categorical_sample": lambda L: L.distributions.Categorical(logits=L.randn(3, 5)).sample((4, 2)).float(),
    "dropout_then_randn": lambda L: L.cat([L.nn.Dropout(0.5)(L.ones(20)), L.randn(3)]),
    # a loader draws a base seed per iteration (sequential too) and a shuffling
    # sampler its own, which seeds the private generator of its permutation
    "dataloader_shuffle": lambda L: L.cat([L.cat([b[0] for b in L.utils.data.DataLoader(
        L.utils.data.TensorDataset(L.arange(10.0)), batch_size=4, shuffle=True)]) for _ in range(2)] + [L.rand(2)]),
    "dataloader_sequential_then_rand": lambda L: L.cat(
        [b for b in L.utils.data.DataLoader(L.arange(3.0), batch_size=2)] + [L.rand(3)]),
    # gamma draws (Marsaglia-Tsang on the default stream; a concentration below 1 boosted)
    "gamma_sample": lambda L: L.distributions.Gamma(L.tensor([0.4, 2.0, 5.0]), L.tensor([1.0, 2.0, 0.5])).sample((3,)),
    "gamma_double_then_rand": lambda L: L.cat([L.distributions.Gamma(
        L.tensor([0.2, 3.0], dtype=L.float64), L.tensor(1.5, dtype=L.float64)).rsample((4,)).flatten().float(),
        L.rand(3)]),
    "beta_sample": lambda L: L.distributions.Beta(L.tensor([0.5, 2.0]), L.tensor([3.0, 0.7])).sample((4,)),
    "dirichlet_sample": lambda L: L.distributions.Dirichlet(L.tensor([[0.3, 1.0, 4.0], [2.0, 2.0, 0.9]])).sample((2,)),
    # Poisson: the product of uniforms below a rate of 10, transformed rejection above
    "poisson": lambda L: L.cat([L.poisson(L.tensor([[0.0, 0.5, 3.0, 9.9], [10.0, 25.0, 100.0, 1000.0]])).flatten(),
                                L.rand(2)]),
    "poisson_distribution": lambda L: L.distributions.Poisson(L.tensor([2.0, 40.0])).sample((5,)),
    # trunc_normal_: full normal draws redrawn where outside [a, b] (a wide window), or
    # uniform candidates accepted against the density (a window under 0.3 of the mass)
    "init_trunc_normal": lambda L: L.cat([L.nn.init.trunc_normal_(L.zeros(300, 4)).flatten(), L.rand(2)]),
    "init_trunc_normal_small_std": lambda L: L.nn.init.trunc_normal_(L.zeros(8, 5), std=0.02),
    "init_trunc_normal_narrow": lambda L: L.cat([L.nn.init.trunc_normal_(L.zeros(37, 5), 0.0, 1.0, 1.0, 3.0).flatten(),
                                                 L.nn.init.trunc_normal_(L.zeros(9), 0.0, 1.0, -0.1, 0.2), L.rand(2)]),
    "init_normal_": lambda L: L.nn.init.normal_(L.zeros(3, 3), 0.0, 0.02),
    "init_xavier": lambda L: L.nn.init.xavier_uniform_(L.zeros(4, 6)),
    "init_kaiming_normal": lambda L: L.nn.init.kaiming_normal_(L.zeros(8, 5), nonlinearity="relu"),
    "init_orthogonal": lambda L: L.nn.init.orthogonal_(L.zeros(4, 6)),
}


# Scalar-p Bernoulli masks and exponential keys (single or unreplaced multinomial
# draws): PyTorch's default CPU kernels, which the engine follows; a build with MKL
# on an Intel CPU may draw them through MKL instead.
MKL_ON_INTEL = {"bernoulli_scalar", "dropout_mask", "dropout_transposed", "dropout_permuted", "dropout_then_randn",
                "multinomial_one",
                "multinomial_without", "categorical_one"}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_seeded_draws_are_pytorchs(fresh, name: str) -> None:
    if name in MKL_ON_INTEL and mkl_on_intel():
        pytest.skip("PyTorch may draw this through MKL on Intel CPUs (docs/engine.md)")
    values = []
    for L in (torch, E):
        L.manual_seed(1234)
        values.append(DRAWS[name](L).numpy().astype(np.float64))
    np.testing.assert_allclose(values[1], values[0], rtol=2e-6, atol=1e-6)


LAYERS = {
    "Linear": lambda L: L.nn.Linear(7, 5),
    "Conv2d": lambda L: L.nn.Conv2d(3, 4, 3),
    "ConvTranspose2d": lambda L: L.nn.ConvTranspose2d(4, 2, 3),
    "Embedding": lambda L: L.nn.Embedding(10, 4),
    "LSTM": lambda L: L.nn.LSTM(3, 4, num_layers=2),
    "GRUCell": lambda L: L.nn.GRUCell(3, 5),
    "MultiheadAttention": lambda L: L.nn.MultiheadAttention(8, 2),
    "MLP": lambda L: L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 1)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_seeded_initialisation_is_pytorchs(fresh, name: str) -> None:
    params = []
    for L in (torch, E):
        L.manual_seed(0)
        params.append([p.detach().numpy().copy() for p in LAYERS[name](L).parameters()])
    assert len(params[0]) == len(params[1])
    for got, want in zip(params[1], params[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_seeded_training_loop_prints_pytorchs_losses(fresh) -> None:
    losses = []
    for L in (torch, E):
        L.manual_seed(42)
        model = L.nn.Sequential(L.nn.Linear(3, 16), L.nn.Tanh(), L.nn.Linear(16, 1))
        opt = L.optim.Adam(model.parameters(), lr=0.01)
        seen = []
        for _ in range(5):
            x = L.randn(8, 3)
            y = x.sum(1, keepdim=True) + 0.1 * L.randn(8, 1)
            loss = L.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen.append(loss.item())
        losses.append(seen)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


def test_initial_seed_is_the_seed_set(fresh) -> None:
    for L in (torch, E):
        L.manual_seed(2024)
        assert L.initial_seed() == 2024
