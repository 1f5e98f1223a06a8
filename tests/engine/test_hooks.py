"""`Tensor.register_hook` as PyTorch 2.13 runs it: a hook sees the gradient with
respect to its tensor once every contribution is summed, a returned tensor
replaces it (what flows on, what a leaf accumulates, what `autograd.grad`
returns), hooks chain in registration order, `remove()` takes one out, and a
tensor that does not require grad refuses one with PyTorch's error. Under strict
semantics the hooks run the same way."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from agreement import raised

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")

START = np.arange(1, 5, dtype=np.float32) / 4
SEMANTICS = ("torch", "strict")


def _values(ts) -> list:
    return [None if t is None else np.asarray(t.tolist()) for t in ts]


def _assert_same(got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5)


def _replacing(L) -> list:
    """Hooks that change the gradient: chained on a non-leaf, on a retained
    non-leaf (its .grad is the changed one) and on a leaf."""
    x = L.tensor(START, requires_grad=True)
    w = L.tensor(START[::-1].copy(), requires_grad=True)
    w.register_hook(lambda g: g + 1)
    y = x * w
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.register_hook(lambda g: g - 0.5)  # sees the tripled gradient
    loss = (y.exp() * y).sum()
    loss.backward()
    return _values([x.grad, w.grad, y.grad])


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_returned_gradient_replaces_it(fresh, semantics: str) -> None:
    fresh(semantics)
    _assert_same(_replacing(E), _replacing(torch))


def _grad_of_hooked(L) -> list:
    """`autograd.grad` returns an input's gradient after its hooks (a leaf's, or a
    non-leaf's whose node it then need not run), and what flows through a hooked
    non-leaf on the way."""
    x = L.tensor(START, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    grads = []
    for wrt in ("x", "y"):  # a fresh forward each time: the strict tape consumes the last
        y = x.sin()
        y.register_hook(lambda g: g + 2)
        grads += L.autograd.grad((y * y).sum(), [x if wrt == "x" else y])
    return _values(grads)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_autograd_grad_returns_the_hooked_gradient(fresh, semantics: str) -> None:
    fresh(semantics)
    _assert_same(_grad_of_hooked(E), _grad_of_hooked(torch))


def _observing(L) -> tuple[list, list, list]:
    """Hooks returning None: each runs once per backward, with the summed gradient
    of a tensor used twice, and may do anything (here: empty a cache)."""
    x = L.tensor(START, requires_grad=True)
    seen: list = []
    order: list[str] = []
    cache = {"y": None}

    def on_x(g):
        seen.append(("x", g.tolist(), g.requires_grad))
        order.append("x")

    def on_y(g):
        seen.append(("y", g.tolist(), g.requires_grad))
        order.append("y")
        cache.clear()

    x.register_hook(on_x)
    for _ in range(2):  # a fresh forward each time: the strict tape consumes the last
        y = x * 2
        cache["y"] = y
        y.register_hook(on_y)
        loss = (y * y).sum() + y.exp().sum()  # y's gradient has two contributions
        loss.backward()
        order.append(f"cache: {sorted(cache)}")
    return seen, order, _values([x.grad])


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_hook_returning_none_runs_once_per_backward_with_the_summed_gradient(fresh, semantics: str) -> None:
    fresh(semantics)
    got, want = _observing(E), _observing(torch)
    assert got[1] == want[1] == ["y", "x", "cache: []"] * 2
    assert [(name, rg) for name, _, rg in got[0]] == [(name, rg) for name, _, rg in want[0]]
    _assert_same([np.asarray(v) for _, v, _ in got[0]], [np.asarray(v) for _, v, _ in want[0]])
    _assert_same(got[2], want[2])


def _ordered(L) -> list[str]:
    """PyTorch runs a leaf's hooks as soon as its gradient is complete, before
    nodes further down the graph."""
    order: list[str] = []
    x = L.tensor(START, requires_grad=True)
    w = L.tensor(START, requires_grad=True)
    x.register_hook(lambda g: order.append("x"))
    w.register_hook(lambda g: order.append("w"))
    u = x * 2
    u.register_hook(lambda g: order.append("u"))
    v = (u * w).exp()
    v.register_hook(lambda g: order.append("v"))
    v.sum().backward()
    return order


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_hooks_run_in_pytorchs_order(fresh, semantics: str) -> None:
    fresh(semantics)
    assert _ordered(E) == _ordered(torch) == ["v", "w", "u", "x"]


def _removed(L) -> list:
    calls: list[str] = []
    x = L.tensor(START, requires_grad=True)
    gone = x.register_hook(lambda g: calls.append("gone") or g * 100)
    x.register_hook(lambda g: calls.append("kept") or g + 1)
    y = x * 3
    y_gone = y.register_hook(lambda g: calls.append("y gone") or g * 100)
    gone.remove()
    y_gone.remove()
    gone.remove()  # removing twice is harmless
    (y * y).sum().backward()
    twin = copy.deepcopy(x)  # PyTorch copies no hooks
    (twin * 2).sum().backward()
    return [calls, *_values([x.grad, twin.grad])]


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_removed_hook_does_not_run(fresh, semantics: str) -> None:
    fresh(semantics)
    got, want = _removed(E), _removed(torch)
    assert got[0] == want[0] == ["kept"]
    _assert_same(got[1:], want[1:])


def _refused(L) -> list[str]:
    plain = L.tensor(START)
    with L.no_grad():
        untracked = L.tensor(START, requires_grad=True) * 2
    return [raised(lambda: plain.register_hook(lambda g: g)),
            raised(lambda: untracked.register_hook(lambda g: g))]


def test_a_tensor_without_grad_refuses_a_hook(fresh) -> None:
    got, want = _refused(E), _refused(torch)
    assert got == want == ["cannot register a hook on a tensor that doesn't require gradient"] * 2


def _bad_returns(L) -> list[str]:
    def grow(g):
        return L.ones(7)

    out = []
    for hook in (grow, lambda g: 5):
        x = L.tensor(START, requires_grad=True)
        y = x * 2
        y.register_hook(hook)
        try:
            y.sum().backward()
            out.append("ok")
        except (RuntimeError, TypeError) as exc:
            out.append(f"{type(exc).__name__}: {exc}")
    return out


def test_a_hook_returning_a_wrong_value_fails_as_in_pytorch(fresh) -> None:
    assert _bad_returns(E) == _bad_returns(torch) == [
        "RuntimeError: hook 'grow' has changed the size of value",
        "TypeError: expected Variable, but hook returned 'int'"]


def _second_order(L) -> list:
    """Under create_graph the hook's result is part of the recorded gradient; the
    second walk passes through y's node again and runs its hook, unrecorded."""
    x = L.tensor(START, requires_grad=True)
    y = x * x
    flags: list = []
    y.register_hook(lambda g: flags.append(L.is_grad_enabled()) or g * y)
    (gx,) = L.autograd.grad(y.sum(), [x], create_graph=True)
    (ggx,) = L.autograd.grad(gx.sum(), [x])
    return [flags, *_values([gx.detach(), ggx])]


def test_a_hook_under_create_graph_is_differentiated(fresh) -> None:
    got, want = _second_order(E), _second_order(torch)
    assert got[0] == want[0] == [True, False]
    _assert_same(got[1:], want[1:])


def _pieces_and_inplace(L) -> list:
    """A piece no loss used passes None (PyTorch's undefined gradient); a hook
    registered before an in-place change sees the old value's gradient."""
    seen: list = []
    x = L.tensor(START, requires_grad=True)
    a, b = (x * 2).chunk(2)
    b.register_hook(lambda g: seen.append(None if g is None else g.tolist()))
    a.sum().backward()
    y = x * 1
    y.register_hook(lambda g: seen.append(("old", g.tolist())))
    y.mul_(3)
    y.register_hook(lambda g: seen.append(("new", g.tolist())))
    (y * 5).sum().backward()
    return seen


def test_unused_pieces_and_inplace_changes_hook_as_in_pytorch(fresh) -> None:
    assert _pieces_and_inplace(E) == _pieces_and_inplace(torch) == [
        None, ("new", [5.0] * 4), ("old", [15.0] * 4)]


def _transform_cache(L) -> list:
    """Pyro's fix (pyro-ppl/pyro#2283): a hook on the cached output empties the
    cache, so the second call recomputes instead of reusing a walked graph."""
    cache: dict = {}

    def exp_cached(x):
        if cache.get("x") is x:
            return cache["y"]
        y = x.exp()
        cache.update(x=x, y=y)
        y.register_hook(lambda _: cache.clear())
        return y

    x = L.tensor(2.0, requires_grad=True)
    return _values([L.autograd.grad(exp_cached(x), [x])[0], L.autograd.grad(exp_cached(x), [x])[0]])


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_hook_that_clears_a_cache_lets_the_next_call_recompute(fresh, semantics: str) -> None:
    fresh(semantics)
    _assert_same(_transform_cache(E), _transform_cache(torch))
