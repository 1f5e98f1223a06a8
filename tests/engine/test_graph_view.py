"""The graph as PyTorch shows it: node class names, next_functions with AccumulateGrad
for leaves, and saved_tensors_hooks (the classic what-does-a-forward-save measurement)."""

from __future__ import annotations

import pytest

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

EXPRESSIONS = {
    "mul": lambda L, x, w: x * w, "add": lambda L, x, w: x + w, "sub": lambda L, x, w: x - w,
    "div": lambda L, x, w: x / w, "sum": lambda L, x, w: x.sum(), "mean": lambda L, x, w: x.mean(),
    "exp": lambda L, x, w: x.exp(), "log": lambda L, x, w: x.log(), "neg": lambda L, x, w: -x,
    "pow": lambda L, x, w: x ** 2, "sqrt": lambda L, x, w: x.sqrt(), "abs": lambda L, x, w: x.abs(),
    "relu": lambda L, x, w: x.relu(), "sigmoid": lambda L, x, w: x.sigmoid(),
    "tanh": lambda L, x, w: x.tanh(), "mm": lambda L, x, w: x @ L.ones(3, 2),
    "view": lambda L, x, w: x.view(6), "reshape": lambda L, x, w: x.reshape(6),
    "transpose": lambda L, x, w: x.transpose(0, 1), "cat": lambda L, x, w: L.cat([x, x]),
    "softmax": lambda L, x, w: x.softmax(1), "log_softmax": lambda L, x, w: x.log_softmax(1),
    "clone": lambda L, x, w: x.clone(), "expand": lambda L, x, w: w.expand(2, 3),
    "maximum": lambda L, x, w: L.maximum(x, w),
    "chain": lambda L, x, w: ((x * w).exp() + 1).sum(),
}


def _view(L, name):
    x, w = L.ones(2, 3, requires_grad=True), L.ones(3, requires_grad=True)
    fn = EXPRESSIONS[name](L, x, w).grad_fn
    nexts = [(type(n).__name__ if n is not None else None) for n, _ in fn.next_functions]
    leaves = [n.variable is x or n.variable is w for n, _ in fn.next_functions
              if type(n).__name__ == "AccumulateGrad"]
    return type(fn).__name__, fn.name(), nexts, leaves


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_node_names_and_edges_are_pytorchs(fresh, name: str) -> None:
    assert _view(E, name) == _view(torch, name)


def _saved_by_forward(L, input_requires_grad: bool) -> tuple[int, float]:
    model = L.nn.Sequential(*[L.nn.Linear(1024, 1024) for _ in range(8)])
    x = L.zeros(512, 1024, requires_grad=input_requires_grad)
    sizes = []

    def pack(t):
        sizes.append(t.numel() * t.element_size())
        return t

    with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    out.sum().backward()  # the unpacked tensors serve the backward
    return len(sizes), sum(sizes) / 2 ** 20


@pytest.mark.parametrize("input_requires_grad, expected", [(False, (15, 44.0)), (True, (16, 48.0))])
def test_saved_tensors_hooks_measure_what_pytorch_measures(fresh, input_requires_grad, expected) -> None:
    assert _saved_by_forward(torch, input_requires_grad) == expected
    assert _saved_by_forward(E, input_requires_grad) == expected


def test_unpack_hook_supplies_the_tensor(fresh) -> None:
    grads = []
    for L in (E, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            y = (x * x).sum()  # each saved x is doubled on the way in: 2 * (2x)
        y.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [4.0, 8.0]
