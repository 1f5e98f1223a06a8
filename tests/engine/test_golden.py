"""Every number and message of shared/spec/semantics.md, reproduced on the tape,
plus the measured checks of torch-semantics.json (exact texts, retain/partial/
create_graph behaviour)."""

from __future__ import annotations

import numpy as np
import pytest

from tapelint_engine import errors, tape
from tapelint_engine import facade as T
from tapelint_engine.errors import SecondBackwardError, TapeConsumedError
from torch_reference import SEMANTICS, load_json


def f32(*values: float) -> list[float]:
    """The float32 values a decimal printout stands for."""
    return [float(np.float32(v)) for v in values]


def leaf(*values: float) -> T.Tensor:
    return T.tensor(list(values), requires_grad=True)


def outcome(fn) -> str | None:
    try:
        fn()
    except SecondBackwardError:
        return "second-time"
    except TapeConsumedError as e:
        return f"consumed {e.node_id}"
    return None


# -------------------------------------------------------------- §1 examples


@pytest.mark.parametrize("expr, torch_fails", [
    (lambda x: (x * 2).sum(), True), (lambda x: (x + 1).sum(), False), (lambda x: (x * x).sum(), True)])
def test_second_backward_of_simple_losses(fresh, expr, torch_fails: bool) -> None:
    x = leaf(1.0, 2.0)
    loss = expr(x)
    loss.backward()
    assert (outcome(loss.backward) == "second-time") is torch_fails
    if not torch_fails:
        assert x.grad.tolist() == [2.0, 2.0]
    fresh("strict")
    x = leaf(1.0, 2.0)
    loss = expr(x)
    loss.backward()
    assert outcome(loss.backward) == f"consumed {loss.grad_fn.id}"  # the loss's own sum


def test_shared_add_survives_in_torch_but_not_strict(fresh) -> None:
    for semantics, expected in (("torch", None), ("strict", "consumed")):
        fresh(semantics)
        a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
        z = a + b
        y1, y2 = (z ** 2).sum(), (z ** 3).sum()
        y1.backward()
        got = outcome(y2.backward)
        assert (got or "").startswith(expected or "") and (got is None) == (expected is None)


def test_shared_mul_by_constant_fails_in_torch(fresh) -> None:
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    f = a + b
    z = 2 * f
    y1, y2 = (z ** 2).sum(), (z ** 3).sum()
    y1.backward()
    assert outcome(y2.backward) == "second-time"


def test_gradients_accumulate_across_retained_backwards(fresh) -> None:
    x = leaf(1.0, 2.0)
    loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert np.allclose(x.grad.tolist(), [10.8731, 44.3343], atol=1e-4)
    xs = np.array([1.0, 2.0], np.float32)
    ex = np.exp(xs.astype(np.float64)).astype(np.float32)  # correctly rounded, as PyTorch's
    once = ex + xs * ex
    assert x.grad.tolist() == (once + once).tolist()


def test_shared_exp_fails_in_both_and_combining_is_bit_identical(fresh) -> None:
    for semantics in ("torch", "strict"):
        fresh(semantics)
        x = leaf(1.0, 2.0)
        h = x.exp()
        l1, l2 = h.sum(), (h * 2).sum()
        l1.backward()
        # torch: exp saved its result; strict: the walk stops at the first consumed node, the shared exp.
        expected = "second-time" if semantics == "torch" else f"consumed {h.grad_fn.id}"
        assert outcome(l2.backward) == expected
    fresh("torch")
    x = leaf(1.0, 2.0)
    h = x.exp()
    l1, l2 = h.sum(), (h * 2).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    retained = x.grad.tolist()
    y = leaf(1.0, 2.0)
    g = y.exp()
    (g.sum() + (g * 2).sum()).backward()
    assert retained == y.grad.tolist() == f32(8.154845, 22.167168)


# ------------------------------------------------------------------- §2 strict


def test_node_ids_and_burn_message(fresh) -> None:
    fresh("strict")
    x = leaf(1.0, 2.0)
    e = x.exp()
    m = e * x
    loss = m.sum()
    assert (x._id, e.grad_fn.id, m.grad_fn.id, loss.grad_fn.id) == (0, 1, 2, 3)
    loss.backward()
    with pytest.raises(TapeConsumedError) as info:
        loss.backward()
    assert str(info.value) == (
        "Cannot run backward: graph tape has already been consumed at NodeId(3). Burn does not "
        "support retain_graph. Combine losses before backward or recompute the forward pass. "
        "Use detach() only to intentionally sever gradients through the previous computation.")
    assert info.value.node_id == 3
    assert not isinstance(info.value, RuntimeError)


def test_prune_rule_with_handle_held_and_deleted(fresh) -> None:
    fresh("strict")
    x = leaf(1.0, 2.0)
    h = x.exp()
    l1, l2 = h.sum(), (h * 2).sum()
    l1.backward()
    assert outcome(l2.backward) == f"consumed {h.grad_fn.id}"  # h is held: exp's id
    fresh("strict")
    x = leaf(1.0, 2.0)
    h = x.exp()
    l1, l2 = h.sum(), (h * 2).sum()
    del h
    l1.backward()
    assert outcome(l2.backward) == f"consumed {l2.grad_fn.id}"  # pruned: l2's own sum


def test_validation_consumes_nothing(fresh) -> None:
    fresh("strict")
    x = leaf(1.0, 2.0)
    h = x.exp()
    h.sum().backward()
    intact = x * 3
    bad = (h * 2).sum() + intact.sum()
    assert outcome(bad.backward) == f"consumed {h.grad_fn.id}"
    x.grad = None
    intact.sum().backward()  # the intact branch kept its steps
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    x.exp().sum().backward()  # fresh forwards from the same leaf keep working
    assert x.grad.tolist() == f32(2.7182817, 7.389056)


@pytest.mark.parametrize("semantics", ["torch", "strict"])
def test_classic_loop_bug_and_its_three_fixes(fresh, semantics: str) -> None:
    fresh(semantics)
    x, w = leaf(0.5, 1.0), leaf(1.0, 2.0)
    feats = x.exp()
    assert feats.grad_fn.id == 2
    errs = []
    for _ in range(2):
        loss = (feats * w).sum()
        errs.append(outcome(loss.backward))
        if errs[-1] is None:
            assert w.grad.tolist() == f32(1.6487212, 2.7182817)
    assert errs == [None, "second-time" if semantics == "torch" else "consumed 2"]

    fresh(semantics)  # A: detach
    x, w = leaf(0.5, 1.0), leaf(1.0, 2.0)
    feats = x.exp().detach()
    for _ in range(2):
        w.grad = None
        (feats * w).sum().backward()
        assert w.grad.tolist() == f32(1.6487212, 2.7182817) and x.grad is None

    fresh(semantics)  # B: recompute in the loop
    x, w = leaf(0.5, 1.0), leaf(1.0, 2.0)
    for _ in range(2):
        x.grad = None
        (x.exp() * w).sum().backward()
        assert x.grad.tolist() == f32(1.6487212, 5.4365635)

    fresh(semantics)  # C: combine the losses that share feats
    x, w = leaf(0.5, 1.0), leaf(1.0, 2.0)
    feats = x.exp()
    ((feats * w).sum() + (feats * 2).sum()).backward()
    assert x.grad.tolist() == f32(4.9461637, 10.873127)


def _abandoned_forwards(n: int) -> tuple[int, int]:
    x = T.randn(64, 64, requires_grad=True)
    for _ in range(n):
        y = x.exp() @ x  # result dropped without backward
        del y
    return tape.live_nodes(), tape.saved_bytes()


def test_abandoned_forwards_are_kept_until_the_next_backward_in_strict(fresh) -> None:
    fresh("strict")
    nodes5, bytes5 = _abandoned_forwards(5)
    fresh("strict")
    nodes20, bytes20 = _abandoned_forwards(20)
    assert nodes20 == 4 * nodes5 and bytes20 == 4 * bytes5 > 20 * 64 * 64 * 4
    y = T.randn(3, requires_grad=True)
    (y * 2).sum().backward()
    assert tape.live_nodes() == 0 and tape.saved_bytes() == 0
    fresh("torch")
    assert _abandoned_forwards(20) == (0, 0)  # refcounting frees them at once


@pytest.mark.parametrize("with_backward", [True, False])
def test_accumulated_total_grows_with_iterations(fresh, with_backward: bool) -> None:
    w = T.randn(8, 8, requires_grad=True)
    total = 0
    seen = []
    for _ in range(6):
        loss = (w.exp() @ w).sum()
        if with_backward:
            loss.backward()
        total += loss
        seen.append((tape.live_nodes(), tape.saved_bytes()))
    nodes = [n for n, _ in seen]
    saved = [b for _, b in seen]
    assert all(b > a for a, b in zip(nodes, nodes[1:]))
    if not with_backward:
        assert all(b > a for a, b in zip(saved, saved[1:]))
    fresh("torch")
    w = T.randn(8, 8, requires_grad=True)
    total = 0.0
    counts = []
    for _ in range(6):
        loss = (w.exp() @ w).sum()
        loss.backward()
        total += loss.item()  # the fix
        counts.append(tape.live_nodes())
    assert len(set(counts)) == 1


# ---------------------------------------------------------------- messages


def test_exact_pytorch_messages(fresh) -> None:
    msgs = {k: v["text"] for k, v in load_json(SEMANTICS)["messages"].items() if v}
    assert errors.SECOND_BACKWARD == msgs["second_backward"]
    assert errors.NON_SCALAR == msgs["backward_non_scalar"]
    assert errors.NONLEAF_GRAD_WARNING == msgs["nonleaf_grad_warning"]
    assert errors.NO_GRAD_FN.format(index=0) == msgs["element0_no_grad"]
    assert errors.GRAD_INPUT_NO_GRAD == msgs["autograd_grad_wrt_tensor_not_requiring_grad"]
    assert errors.GRAD_INPUT_UNUSED.format(index=0) == msgs["autograd_grad_wrt_unused_tensor"]
    assert errors.LEAF_INPLACE == msgs["leaf_inplace"]
    assert errors.NUMPY_REQUIRES_GRAD == msgs["numpy_requires_grad"]
    assert errors.INT_REQUIRES_GRAD == msgs["int_requires_grad"]
    assert errors.REQUIRES_GRAD_NONLEAF == msgs["requires_grad_false_on_nonleaf"]

    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x.exp()
    loss = (h * 2).sum()
    with T.no_grad():
        h.add_(1)
    with pytest.raises(errors.InplaceModifiedError) as info:
        loss.backward()
    assert str(info.value) == msgs["inplace_modified"]

    with pytest.raises(RuntimeError, match="^grad can be implicitly"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="^element 0 of tensors"):
        x.detach().sum().backward()
    with pytest.raises(RuntimeError) as info:
        x.numpy()
    assert str(info.value) == msgs["numpy_requires_grad"]
    with pytest.raises(RuntimeError) as info:
        T.tensor([1, 2], requires_grad=True)
    assert str(info.value) == msgs["int_requires_grad"]
    with pytest.raises(RuntimeError) as info:
        x.add_(1)
    assert str(info.value) == msgs["leaf_inplace"]
    with pytest.raises(RuntimeError) as info:
        (x * 1).requires_grad_(False)
    assert str(info.value) == msgs["requires_grad_false_on_nonleaf"]
    with pytest.warns(UserWarning) as rec:
        assert (x * 1).grad is None
    assert str(rec[0].message) == msgs["nonleaf_grad_warning"]


def test_inplace_error_on_a_leaf_modified_by_an_optimizer(fresh) -> None:
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)  # so that mul saves w
    w = T.nn.Parameter(T.tensor([1.0, 2.0, 3.0]))
    loss = (x * w).sum()
    loss.backward(retain_graph=True)
    T.optim.SGD([w], lr=0.1).step()
    with pytest.raises(errors.InplaceModifiedError) as info:
        loss.backward()
    assert "[torch.FloatTensor [3]] is at version 1; expected version 0 instead." in str(info.value)


# ------------------------------------------------------ torch-semantics.json


def test_retain_graph_semantics(fresh) -> None:
    x = leaf(1.0, 2.0, 3.0)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    loss.backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    assert outcome(loss.backward) == "second-time"
    x = leaf(1.0, 2.0, 3.0)
    loss = (x + 1).sum()
    assert [outcome(loss.backward) for _ in range(3)] == [None, None, None]
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_autograd_grad_and_create_graph(fresh) -> None:
    x = leaf(1.0, 2.0, 3.0)
    y = (x ** 3).sum()
    (gx,) = T.autograd.grad(y, x, create_graph=True)
    assert gx.tolist() == [3.0, 12.0, 27.0] and gx.requires_grad and x.grad is None
    gx.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0, 18.0]
    y.backward()  # create_graph implied retain_graph
    assert outcome(y.backward) == "second-time"
    x = leaf(1.0, 2.0, 3.0)
    y = (x ** 3).sum()
    T.autograd.grad(y, x)
    assert outcome(y.backward) == "second-time"
    x = leaf(1.0, 2.0, 3.0)
    y = (x ** 3).sum()
    T.autograd.grad(y, x, retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [3.0, 12.0, 27.0]


def test_shared_and_partial_backwards(fresh) -> None:
    x = leaf(1.0, 2.0, 3.0)
    h = x.exp()
    l1, l2 = (h + 1).sum(), (h + 2).sum()
    l1.backward(retain_graph=True)
    l2.backward()
    assert np.allclose(x.grad.tolist(), [5.4366, 14.7781, 40.1711], atol=1e-4)
    assert outcome(l1.backward) == "second-time"
    h2 = x.exp()
    T.autograd.backward([(h2 + 1).sum(), (h2 + 2).sum()])
    h3 = x + 1
    h3.sum().backward()
    assert outcome((h3 + 2).sum().backward) is None
    w = leaf(1.0, 1.0, 1.0)
    loss = (x.exp() + w).sum()
    loss.backward(inputs=[w])
    assert outcome(loss.backward) is None
    loss = (x.exp() + w).sum()
    T.autograd.grad(loss, w)
    assert outcome(loss.backward) is None
    loss = (x.exp() + w).sum()
    loss.backward()
    assert outcome(lambda: loss.backward(inputs=[w])) is None


def test_retain_grad_and_detach(fresh) -> None:
    x = leaf(1.0, 2.0)
    y = x * 3
    y.retain_grad()
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0]
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    with T.no_grad():
        assert not (x * 2).requires_grad
    with T.inference_mode():
        assert not (x * 2).requires_grad
    assert (x.detach() * x).requires_grad


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_rnn_hidden_state_carried(fresh, cls: str) -> None:
    def run(detach: bool = False, retain: bool = False, step: bool = False) -> list:
        T.manual_seed(0)
        m = getattr(T.nn, cls)(3, 4, batch_first=True)
        opt = T.optim.SGD(m.parameters(), lr=0.1)
        h, errs = None, []
        for _ in range(3):
            out, h = m(T.randn(2, 5, 3), h)
            if detach:
                h = tuple(t.detach() for t in h) if isinstance(h, tuple) else h.detach()
            try:
                out.sum().backward(retain_graph=retain)
            except RuntimeError as e:
                errs.append("inplace" if "inplace" in str(e) else "second-time")
                break
            errs.append(None)
            if step:
                opt.step()
        return errs

    assert run() == [None, "second-time"]
    assert run(detach=True) == [None, None, None]
    assert run(retain=True) == [None, None, None]
    assert run(step=True) == [None, "second-time"]
    assert run(retain=True, step=True) == [None, "inplace"]
