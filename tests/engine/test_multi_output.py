"""Nodes with several outputs, as PyTorch 2.13 builds them: every piece of a
`split`/`chunk`/`unbind` has the same grad_fn (`SplitBackward0`,
`SplitWithSizesBackward0`, `UnbindBackward0`), told apart by `output_nr`; a
piece no loss used gets a zero gradient; `retain_grad`, `autograd.grad` with a
piece as input and a double backward through pieces run as on PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

PIECES = {
    "split": lambda L, y: y.split(2),
    "split_sizes": lambda L, y: y.split([1, 3]),
    "torch_split": lambda L, y: L.split(y, 3, 1),
    "chunk": lambda L, y: y.chunk(2, 1),
    "chunk_uneven": lambda L, y: L.chunk(y, 3),
    "unbind": lambda L, y: L.unbind(y, 1),
    "iterate": lambda L, y: tuple(y),
}

START = np.arange(24, dtype=np.float32).reshape(4, 6) / 10


def _structure(L, name: str) -> tuple:
    x = L.tensor(START, requires_grad=True)
    y = x * 2
    pieces = PIECES[name](L, y)
    first = pieces[0].grad_fn
    shared = all(p.grad_fn is first for p in pieces)
    parent = [(type(n).__name__, nr) for n, nr in first.next_functions]
    return (type(first).__name__, [p.output_nr for p in pieces], shared, parent,
            [tuple(p.shape) for p in pieces])


@pytest.mark.parametrize("name", sorted(PIECES))
def test_pieces_share_one_node_as_in_pytorch(fresh, name: str) -> None:
    assert _structure(E, name) == _structure(torch, name)


def _grads(L, name: str) -> list[np.ndarray]:
    """Only the first and last pieces feed the loss; the first retains its grad."""
    x = L.tensor(START, requires_grad=True)
    pieces = PIECES[name](L, x * 2)
    pieces[0].retain_grad()
    loss = (pieces[0] ** 2).sum() + (pieces[-1] * 3).sum()
    loss.backward()
    return [np.asarray(x.grad.tolist()), np.asarray(pieces[0].grad.tolist())]


@pytest.mark.parametrize("name", sorted(PIECES))
def test_gradients_through_pieces_are_pytorchs(fresh, name: str) -> None:
    for got, want in zip(_grads(E, name), _grads(torch, name)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def _grad_of_piece_and_double_backward(L) -> list[np.ndarray]:
    x = L.tensor(START, requires_grad=True)
    a, b = (x * 2).chunk(2, 1)
    out = (a * b).sum()
    (ga,) = L.autograd.grad(out, [a], retain_graph=True)
    (gx,) = L.autograd.grad(out, [x], create_graph=True)
    (ggx,) = L.autograd.grad((gx ** 2).sum(), [x])
    return [np.asarray(t.tolist()) for t in (ga, gx.detach(), ggx)]


def test_autograd_grad_of_a_piece_and_second_order_are_pytorchs(fresh) -> None:
    for got, want in zip(_grad_of_piece_and_double_backward(E), _grad_of_piece_and_double_backward(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def _second_backward(L) -> str:
    x = L.tensor(START, requires_grad=True)
    a, b = (x.exp()).split(2)
    loss = (a * b).sum()
    loss.backward()
    return raised(loss.backward).split(".")[0]


def test_second_backward_through_pieces_fails_as_in_pytorch(fresh) -> None:
    assert _second_backward(E) == _second_backward(torch) != "ok"


def test_strict_tape_keeps_one_slice_per_piece(fresh) -> None:
    """burn has no multi-output ops: its tape records each piece as a slice."""
    fresh("strict")
    x = E.ones(4, 3, requires_grad=True)
    a, b = x.split(2)
    assert a.grad_fn is not b.grad_fn and type(a.grad_fn).__name__ == "SliceBackward0"


RECURRENT = {  # ATen's CPU graph for RNN and GRU: the input projected once, unbound, outputs stacked
    "rnn": lambda L, x, h: L.nn.RNN(3, 4)(x)[0],
    "rnn_relu_no_bias": lambda L, x, h: L.nn.RNN(3, 4, nonlinearity="relu", bias=False)(x)[0],
    "rnn_two_layers_batch_first": lambda L, x, h: L.nn.RNN(3, 4, num_layers=2, batch_first=True)(x)[0],
    "rnn_given_state": lambda L, x, h: L.nn.RNN(3, 4)(x, h)[1],
    "rnn_unbatched": lambda L, x, h: L.nn.RNN(3, 4)(x[:, 0])[0],
    "gru": lambda L, x, h: L.nn.GRU(3, 4)(x)[0],
    "gru_two_layers": lambda L, x, h: sum(t.sum() for t in L.nn.GRU(3, 4, num_layers=2)(x)),
    "gru_batch_first_given_state": lambda L, x, h: L.nn.GRU(3, 4, batch_first=True)(x.transpose(0, 1), h)[0],
}


@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent_graphs_are_atens(fresh, name: str) -> None:
    from agreement import assert_agrees, assert_same_graph

    def build(L, x, h):
        L.manual_seed(0)
        return RECURRENT[name](L, x, h) + h.sum()  # every input gets a gradient

    assert_same_graph(E, torch, build, [(5, 2, 3), (1, 2, 4)], seed=3)
    assert_agrees(E, torch, build, [(5, 2, 3), (1, 2, 4)], seed=3)
