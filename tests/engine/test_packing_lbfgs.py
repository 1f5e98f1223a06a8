"""`torch.nn.utils.rnn` (packed and padded sequences through RNN/GRU/LSTM) and
`torch.optim.LBFGS`, value for value against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

from tapelint_engine import facade as E
from tapelint_engine.errors import NotSupportedByEngine

torch = pytest.importorskip("torch")


def _packed_run(L, cls: str, enforce_sorted: bool, batch_first: bool, layers: int, with_hx: bool) -> list:
    L.manual_seed(0)
    rnn = getattr(L.nn, cls)(3, 5, num_layers=layers, batch_first=batch_first)
    rng = np.random.default_rng(0)
    x = L.tensor(rng.standard_normal((3, 4, 3) if batch_first else (4, 3, 3)).astype(np.float32),
                 requires_grad=True)
    lengths = L.tensor([4, 2, 1] if enforce_sorted else [2, 4, 1])
    packed = L.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                 enforce_sorted=enforce_sorted)
    hx = None
    if with_hx:
        h = L.tensor(rng.standard_normal((layers, 3, 5)).astype(np.float32))
        hx = (h, h * 0.5) if cls == "LSTM" else h
    out, hn = rnn(packed, hx)
    padded, lens = L.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)
    h_last = hn[0] if cls == "LSTM" else hn
    ((padded * padded.detach().sin()).sum() + (h_last * 2).sum()).backward()
    return [padded.detach().numpy(), h_last.detach().numpy(), lens.numpy(), out.batch_sizes.numpy(),
            x.grad.numpy(), rnn.weight_hh_l0.grad.numpy()]


@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("enforce_sorted, batch_first, layers, with_hx",
                         [(True, True, 1, False), (False, False, 2, True), (False, True, 1, True),
                          (True, False, 2, False)])
def test_packed_sequences_agree(fresh, cls, enforce_sorted, batch_first, layers, with_hx) -> None:
    args = (cls, enforce_sorted, batch_first, layers, with_hx)
    for got, want in zip(_packed_run(E, *args), _packed_run(torch, *args)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_pad_and_pack_sequence_agree(fresh) -> None:
    def run(L):
        a = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        b = L.tensor([[7.0, 8.0]], requires_grad=True)
        padded = L.nn.utils.rnn.pad_sequence([a, b], batch_first=True, padding_value=-1.0)
        packed = L.nn.utils.rnn.pack_sequence([b, a], enforce_sorted=False)
        (padded.sum() + (packed.data * 2).sum()).backward()
        return padded.tolist(), packed.batch_sizes.tolist(), packed.sorted_indices.tolist(), a.grad.tolist()
    assert run(E) == run(torch)


def test_unsorted_lengths_raise_pytorchs_error(fresh) -> None:
    texts = []
    for L in (E, torch):
        with pytest.raises(RuntimeError) as info:
            L.nn.utils.rnn.pack_padded_sequence(L.zeros(3, 2, 1), L.tensor([1, 3]), enforce_sorted=True)
        texts.append(str(info.value))
    assert texts[0] == texts[1]


def _lbfgs_fit(L, **options) -> tuple:
    w = L.zeros(3, requires_grad=True)
    x = L.linspace(-1, 1, 20)
    y = 1 + 2 * x - 0.5 * x ** 2
    opt = L.optim.LBFGS([w], **options)

    def closure():
        opt.zero_grad()
        loss = ((w[0] + w[1] * x + w[2] * x ** 2 - y) ** 2).mean()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(3)]
    return w.detach().numpy(), losses, opt.state[next(iter(opt.state))]["func_evals"]


@pytest.mark.parametrize("options", [{}, {"lr": 0.5, "max_iter": 10}, {"lr": 1, "max_iter": 4, "history_size": 2}])
def test_lbfgs_agrees(fresh, options) -> None:
    got, want = _lbfgs_fit(E, **options), _lbfgs_fit(torch, **options)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-3, atol=1e-8)
    assert got[2] == want[2]  # the same number of closure evaluations


def test_lbfgs_line_search_is_refused(fresh) -> None:
    with pytest.raises(NotSupportedByEngine, match="line_search_fn"):
        E.optim.LBFGS([E.zeros(1, requires_grad=True)], line_search_fn="strong_wolfe")
