"""In-place changes of a view keep the written values' history, as PyTorch's
`CopySlices` does: after `dst[i].copy_(src)` a backward through `dst` reaches
`src`, a second backward through `src`'s freed graph fails, and the nodes
(`CopySlices` on the base, `AsStridedBackward0` on the view) are PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

START = np.arange(4, dtype=np.float32) / 3


def _shape(fn) -> str:
    if fn is None:
        return "None"
    inner = ", ".join(_shape(n) for n, _ in fn.next_functions)
    return type(fn).__name__ + (f"({inner})" if fn.next_functions else "")


def _copy_into_rows(L) -> list:
    dst, src = L.zeros(3, 4), L.tensor(START, requires_grad=True)
    row = dst[1]
    row.copy_(src.exp())
    structure = (_shape(dst.grad_fn), _shape(row.grad_fn), dst._version, dst.requires_grad)
    loss = (dst * dst).sum()
    loss.backward()
    grad = src.grad.tolist()
    return [structure, grad, raised(loss.backward)]


def test_copy_into_a_row_reaches_the_source_and_frees_its_graph(fresh) -> None:
    got, want = _copy_into_rows(E), _copy_into_rows(torch)
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    assert got[2] == want[2] and got[2].startswith("Trying to backward through the graph a second time")


def _rows_of_a_loop(L) -> list:
    """The hand-written RNN's `outputs[t].copy_(h)`, then a loss on the whole buffer."""
    L.manual_seed(0)
    cell = L.nn.Linear(4, 4)
    h, out = L.zeros(4), L.zeros(3, 4)
    for t in range(3):
        h = cell(h + L.tensor(START)).tanh()
        out[t].copy_(h)
    out.sum().backward()
    return [p.grad.numpy() for p in cell.parameters()]


def test_a_buffer_filled_row_by_row_backpropagates_as_pytorchs(fresh) -> None:
    for got, want in zip(_rows_of_a_loop(E), _rows_of_a_loop(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _ops_on_views(L) -> list:
    x = L.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    w = L.tensor(START, requires_grad=True)
    y = x * 1
    y[1].mul_(w)
    y[:, 1:3].add_(w[:2])
    y[2].div_(w + 1)
    y.t()[0].relu_()
    structure = _shape(y.grad_fn)
    (y ** 2).sum().backward()
    return [structure, x.grad.numpy(), w.grad.numpy()]


def test_in_place_ops_on_views_of_a_tracked_tensor_are_pytorchs(fresh) -> None:
    got, want = _ops_on_views(E), _ops_on_views(torch)
    assert got[0] == want[0]
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def _saved_result_modified(L) -> str:
    x = L.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    y = x * 1
    y[0].relu_()  # saves its result, a view of y
    y[1].add_(1)  # a later write to the same storage
    return raised(lambda: y.sum().backward())


def test_a_saved_view_changed_later_fails_the_version_check(fresh) -> None:
    assert _saved_result_modified(E) == _saved_result_modified(torch) != "ok"


def test_a_view_of_a_leaf_that_requires_grad_is_refused_as_in_pytorch(fresh) -> None:
    results = []
    for L in (E, torch):
        x = L.ones(3, 4, requires_grad=True)
        results.append(raised(lambda x=x: x[0].mul_(2)))
    assert results[0] == results[1] != "ok"


def test_untracked_writes_stay_untracked(fresh) -> None:
    for L in (E, torch):
        dst, src = L.zeros(2, 3), L.ones(3, requires_grad=True)
        with L.no_grad():
            dst[0].copy_(src)
        assert not dst.requires_grad and dst[0].tolist() == [1.0, 1.0, 1.0]
