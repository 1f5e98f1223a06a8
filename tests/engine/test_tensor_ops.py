"""einsum, cumprod, scatter/index adds, unfold, cdist, lgamma/digamma against PyTorch:
values and gradients at rtol 1e-4; batched products, one-operand einsum and the
losses PyTorch composes (label smoothing, nll_loss on 3-D and 5-D input) also build
PyTorch's graph, node for node."""

from __future__ import annotations

import numpy as np
import pytest
from agreement import assert_agrees, assert_same_graph  # tests/engine/agreement.py

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

IDX = [[0, 1, 2, 0], [2, 2, 1, 0]]
CASES = {
    "einsum_mm": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(3, 4), (4, 5)]),
    "einsum_bmm": (lambda L, a, b: L.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_sum": (lambda L, a: L.einsum("ij->i", a), [(3, 4)]),
    "einsum_ellipsis": (lambda L, a, b: L.einsum("...ij,...j->...i", a, b), [(2, 3, 4), (2, 4)]),
    "einsum_outer3": (lambda L, a, b, c: L.einsum("i,j,k->ijk", a, b, c), [(2,), (3,), (4,)]),
    "einsum_implicit": (lambda L, a, b: L.einsum("ij,jk", a, b), [(3, 4), (4, 5)]),
    "einsum_list": (lambda L, a, b: L.einsum("bhqd,bhkd->bhqk", [a, b]), [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "cumprod": (lambda L, a: a.cumprod(dim=1), [(3, 4)]),
    "scatter_add": (lambda L, a, s: a.scatter_add(1, L.tensor(IDX), s), [(2, 3), (2, 4)]),
    "scatter_add_": (lambda L, a, s: (a * 1).scatter_add_(1, L.tensor(IDX), s), [(2, 3), (2, 4)]),
    "index_add": (lambda L, a, s: L.index_add(a, 0, L.tensor([0, 2, 0]), s, alpha=2.0), [(3, 4), (3, 4)]),
    "index_add_": (lambda L, a, s: (a * 1).index_add_(1, L.tensor([1, 1]), s), [(2, 3), (2, 2)]),
    "unfold": (lambda L, a: a.unfold(1, 3, 2), [(2, 8)]),
    "unfold_dim0": (lambda L, a: a.unfold(0, 2, 1), [(4, 2, 3)]),
    "cdist": (lambda L, a, b: L.cdist(a, b), [(4, 3), (5, 3)]),
    "cdist_p1_batched": (lambda L, a, b: L.cdist(a, b, p=1), [(2, 4, 3), (2, 5, 3)]),
    "lgamma": (lambda L, a: (a * a + 0.5).lgamma(), [(3, 4)]),
    "tril": (lambda L, a: L.tril(a, -1) + a.triu(2), [(2, 4, 5)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_agrees_with_pytorch(fresh, name: str) -> None:
    fn, shapes = CASES[name]
    assert_agrees(E, torch, fn, shapes, seed=len(name))


def test_digamma_and_constants(fresh) -> None:
    x = [0.3, 1.0, 7.5, 20.0]
    np.testing.assert_allclose(E.digamma(E.tensor(x)).numpy(), torch.digamma(torch.tensor(x)).numpy(),
                               rtol=1e-6)
    assert (E.pi, E.e, E.inf) == (torch.pi, torch.e, torch.inf)


def test_single_operand_einsum_saves_nothing(fresh) -> None:
    """As measured on PyTorch: a summing einsum survives a second backward, a product does not."""
    for L in (E, torch):
        x = L.ones(2, 3, requires_grad=True)
        loss = L.einsum("ij->i", x).sum()
        loss.backward()
        loss.backward()
        y = L.einsum("ij,ij->", x, x)
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()


GRAPH_CASES = {  # node classes and saved tensors as PyTorch's, run now
    "matmul_3d_3d": (lambda L, a, b: a @ b, [(2, 4, 5), (2, 5, 3)]),
    "matmul_4d_4d": (lambda L, a, b: L.matmul(a, b), [(2, 3, 4, 5), (2, 3, 5, 2)]),
    "matmul_4d_3d_broadcast": (lambda L, a, b: a @ b, [(2, 3, 4, 5), (3, 5, 2)]),
    "matmul_3d_2d": (lambda L, a, b: a @ b, [(2, 4, 5), (5, 3)]),
    "matmul_broadcast_inner": (lambda L, a, b: a @ b, [(2, 1, 4, 5), (2, 3, 5, 2)]),
    "matmul_broadcast_outer": (lambda L, a, b: a @ b, [(1, 3, 4, 5), (2, 3, 5, 2)]),
    "bmm": (lambda L, a, b: L.bmm(a, b) + a.bmm(b), [(2, 4, 5), (2, 5, 3)]),
    "einsum_sum": (lambda L, a: L.einsum("ij->i", a), [(3, 4)]),
    "label_smoothing_mean_ignored": (lambda L, a: L.nn.functional.cross_entropy(
        a, L.tensor([1, -100, 3, 0]), label_smoothing=0.2), [(4, 5)]),
    "label_smoothing_sum": (lambda L, a: L.nn.functional.cross_entropy(
        a, L.tensor([1, 2, 3, 0]), label_smoothing=0.1, reduction="sum"), [(4, 5)]),
    "label_smoothing_none_2d": (lambda L, a: L.nn.functional.cross_entropy(
        a, L.tensor([[1, 2], [0, 4]]), label_smoothing=0.3, reduction="none", ignore_index=4), [(2, 5, 2)]),
    "nll_loss_3d": (lambda L, a: L.nn.functional.nll_loss(a, L.tensor([[1, 2, 0], [0, 4, 1]])), [(2, 5, 3)]),
    "nll_loss_3d_transposed_none": (lambda L, a: L.nn.functional.nll_loss(
        a.transpose(1, 2), L.tensor([[1, 2, 0], [0, 4, 1]]), reduction="none"), [(2, 3, 5)]),
    "cross_entropy_5d_sum": (lambda L, a: L.nn.functional.cross_entropy(
        a, L.zeros(2, 2, 1, 2, dtype=L.int64) + 1, reduction="sum"), [(2, 3, 2, 1, 2)]),
    "einsum_transpose": (lambda L, a: L.einsum("ij->ji", a), [(3, 4)]),
    "einsum_identity": (lambda L, a: L.einsum("ijk->ijk", a), [(2, 3, 4)]),
    "einsum_total": (lambda L, a: L.einsum("ijk->", a), [(2, 3, 4)]),
    "einsum_reorder_sum": (lambda L, a: L.einsum("ijk->kj", a), [(2, 3, 4)]),
    "einsum_ellipsis_sum": (lambda L, a: L.einsum("...j->...", a), [(2, 3, 4)]),
}


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
def test_products_and_one_operand_einsum_build_pytorchs_graph(fresh, name: str) -> None:
    fn, shapes = GRAPH_CASES[name]
    assert_agrees(E, torch, fn, shapes, seed=len(name))
    assert_same_graph(E, torch, fn, shapes, seed=len(name))


EINSUM_GRAPHS = {  # ATen's lowering of two operands: align, sum single-operand labels, one bmm
    "ij,jk->ik": [(2, 3), (3, 4)], "ij,jk->ki": [(2, 3), (3, 4)], "ij,jk": [(2, 3), (3, 4)],
    "bqd,bkd->bqk": [(2, 5, 3), (2, 4, 3)], "bij,bjk->bki": [(2, 2, 3), (2, 3, 4)],
    "bhqd,bhkd->bhqk": [(2, 2, 4, 3), (2, 2, 5, 3)], "bhqk,bhkd->bqhd": [(2, 2, 4, 5), (2, 2, 5, 3)],
    "i,j->ij": [(3,), (4,)], "i,i->": [(3,), (3,)], "bi,bj->bij": [(2, 3), (2, 4)],
    "ijk,jl->il": [(2, 3, 4), (3, 5)], "ij,kj->i": [(2, 3), (4, 3)], "Ab,bC->CA": [(2, 3), (3, 4)],
    "ij,jk->ik ones": [(1, 3), (3, 1)],
}


@pytest.mark.parametrize("key", sorted(EINSUM_GRAPHS))
def test_two_operand_einsum_graphs_are_atens(fresh, key: str) -> None:
    from agreement import assert_agrees, assert_same_graph

    equation = key.split(" ")[0]

    def build(L, x, y):
        return L.einsum(equation, x, y)

    assert_same_graph(E, torch, build, EINSUM_GRAPHS[key], seed=2)
    assert_agrees(E, torch, build, EINSUM_GRAPHS[key], seed=2)
