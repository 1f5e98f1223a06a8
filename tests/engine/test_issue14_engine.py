"""Issue 14's engine items and issue 11's bugs, each against real PyTorch where it applies:
the in-place error's exact text, `tape` + `ops` usable alone, arguments that change
results refused (never ignored), legacy constructors, `torch.normal(requires_grad=)`,
and the failing line of an in-place error in `tapelint run`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tapelint_engine import facade as E
from tapelint_engine.errors import NotSupportedByEngine
from tapelint_engine.runner import run_program
from torch_reference import SEMANTICS, load_json

torch = pytest.importorskip("torch")


def _exp_then_add(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _saved_input_modified(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    z = y * y
    y.add_(1)  # y's grad_fn is now the add: PyTorch names it, not Exp
    z.sum().backward()


def _twice_modified(L):
    x = L.ones(2, 3, requires_grad=True)
    h = x * 2
    y = h * h
    h.mul_(3)
    h.mul_(2)
    y.sum().backward()


def _linear_weight_stepped(L):
    lin = L.nn.Linear(3, 2)  # its init wrote the weight once: version 1
    x = L.ones(4, 3, requires_grad=True)
    loss = lin(x).sum()
    with L.no_grad():
        lin.weight.add_(1.0)  # what optimizer.step() does
    loss.backward()  # the saved weight.t() view: [3, 2], AsStrided, version 2


def _view_of_modified_base(L):
    x = L.ones(2, 3, requires_grad=True)
    y = x * 1
    w = y[0]
    z = (w * w).sum()
    y.add_(1)
    z.backward()


def _transposed_view(L):
    x = L.ones(2, 3, requires_grad=True)
    a = x.sigmoid()
    b = a.t()
    z = (b * b).sum()
    a.mul_(2)
    z.backward()


def _leaf_modified(L):
    w = L.ones(3, 2, requires_grad=True)
    loss = (w * w).sum()
    with L.no_grad():
        w.mul_(2)
    loss.backward()


def _untracked_modified(L):
    x = L.ones(2, 3)
    w = L.ones(3, requires_grad=True)
    z = (x[0] * w).sum()
    x.add_(1)
    z.backward()


INPLACE_CASES = [_exp_then_add, _saved_input_modified, _twice_modified, _linear_weight_stepped,
                 _view_of_modified_base, _transposed_view, _leaf_modified, _untracked_modified]


def _message(L, case) -> str:
    with pytest.raises(RuntimeError) as info:
        case(L)
    return str(info.value)


@pytest.mark.parametrize("case", INPLACE_CASES, ids=[c.__name__ for c in INPLACE_CASES])
def test_inplace_error_text_is_pytorchs(fresh, case) -> None:
    assert _message(E, case) == _message(torch, case)


def test_inplace_texts_of_the_reference(fresh) -> None:
    """The measured text of the reference, produced by the same program."""
    measured = load_json(SEMANTICS)["messages"]["inplace_modified"]["text"]
    assert _message(E, _exp_then_add) == measured


def test_tape_and_ops_alone_can_run_backward() -> None:
    """Backward formulas need Tensor operators; importing `ops` brings them."""
    code = textwrap.dedent("""
        import numpy as np
        from tapelint_engine import ops, tape
        x = tape.Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
        loss = ops.sum(ops.mul(ops.exp(x), x))
        loss.backward()
        print(x.grad.arr.tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    want = (np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))).astype(np.float32)
    np.testing.assert_allclose(json.loads(out.stdout), want, rtol=1e-6)


# ----------------------------------------------------------- silent arguments


@pytest.mark.parametrize("call", [
    lambda L: L.nn.utils.clip_grad_norm_([L.ones(2, requires_grad=True)], 1.0, error_if_nonfinite=True),
    lambda L: L.nn.functional.mse_loss(L.ones(2), L.zeros(2), weight=L.ones(2)),
    lambda L: L.nn.functional.embedding(L.tensor([0]), L.ones(3, 2), max_norm=1.0),
    lambda L: L.nn.Embedding(3, 2, scale_grad_by_freq=True),
    lambda L: L.nn.Linear(2, 3, dtype=L.float64),
    lambda L: L.nn.functional.dropout(L.ones(4), 0.5, True, inplace=True),
    lambda L: L.nn.SiLU(inplace=True),
    lambda L: L.zeros(2, out=L.ones(2)),
    lambda L: L.optim.SGD([L.ones(2, requires_grad=True)], lr=0.1, differentiable=True),
    lambda L: L.nn.init.uniform_(L.ones(2), generator=object()),
    lambda L: L.normal(L.zeros(2), 1.0, generator=object()),
])
def test_arguments_that_change_results_are_unsupported(fresh, call) -> None:
    with pytest.raises(NotSupportedByEngine):
        call(E)


@pytest.mark.parametrize("size_average, reduce", [(None, False), (False, None), (True, True),
                                                  (False, True), (True, False)])
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "cross_entropy",
                                  "binary_cross_entropy_with_logits", "nll_loss", "MSELoss"])
def test_legacy_reduction_arguments_agree(fresh, loss, size_average, reduce) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    results = []
    for L in (torch, E):
        inp = L.tensor(x, requires_grad=True)
        if loss in ("cross_entropy", "nll_loss"):
            target = L.tensor([0, 2, 1, 1])
            inp2 = L.nn.functional.log_softmax(inp, 1) if loss == "nll_loss" else inp
        else:
            target, inp2 = L.tensor(np.abs(x) / 3), inp
        if loss == "MSELoss":
            out = L.nn.MSELoss(size_average, reduce)(inp2, target)
        else:
            out = getattr(L.nn.functional, loss)(inp2, target, size_average=size_average, reduce=reduce)
        out.sum().backward()
        results.append((out.detach().numpy().copy(), inp.grad.numpy().copy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_inplace_relu_module_runs_in_place(fresh) -> None:
    """nn.ReLU(inplace=True) modifies its input: a saved input then fails, as in PyTorch."""
    def program(L):
        x = L.ones(3, requires_grad=True)
        h = x * 2
        y = h * h
        L.nn.ReLU(inplace=True)(h)
        y.sum().backward()
    assert _message(E, program) == _message(torch, program)


# ------------------------------------------------------- constructors, normal


@pytest.mark.parametrize("make", [
    lambda L: L.Tensor(2, 3), lambda L: L.Tensor([1, 2]), lambda L: L.Tensor(),
    lambda L: L.FloatTensor(4), lambda L: L.LongTensor([1, 2]), lambda L: L.DoubleTensor([[1.5]]),
    lambda L: L.Tensor(L.Size([2, 2])), lambda L: L.ones(2).new(3, 1),
    lambda L: L.ones(2).new([1, 2]), lambda L: L.ones(2, dtype=L.float64).new_zeros(3),
    lambda L: L.ones(2).new_full((2,), 3.0), lambda L: L.ones(2).new_empty(2, 2),
    lambda L: L.ones(2).new_tensor([4, 5]), lambda L: L.ones(2).new_ones(2, dtype=L.int64),
])
def test_legacy_constructors_agree(fresh, make) -> None:
    ours, theirs = make(E), make(torch)
    assert (tuple(ours.shape), str(ours.dtype)) == (tuple(theirs.shape), str(theirs.dtype))
    if "empty" not in repr(make) and ours.numel() and tuple(theirs.shape) not in ((2, 3), (4,), (3, 1), (2, 2)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_legacy_classes_check_like_pytorch(fresh) -> None:
    x, i = E.ones(2), E.tensor([1])
    assert isinstance(x, E.Tensor) and isinstance(i, E.Tensor)
    assert isinstance(x, E.FloatTensor) and not isinstance(i, E.FloatTensor)
    assert isinstance(E.nn.Parameter(E.ones(1)), E.Tensor)
    assert E.Tensor.backward is E.ones(1).backward.__func__


def test_parameter_of_a_legacy_tensor(fresh) -> None:
    p = E.nn.Parameter(E.Tensor(2, 3))
    assert p.shape == (2, 3) and p.requires_grad and p.is_leaf


def test_new_zeros_keeps_requires_grad(fresh) -> None:
    x = E.ones(2)
    assert x.new_zeros(3, requires_grad=True).requires_grad
    assert torch.ones(2).new_zeros(3, requires_grad=True).requires_grad


def test_normal_keeps_requires_grad(fresh) -> None:
    for L in (E, torch):
        t = L.normal(0.0, 1.0, size=(4,), requires_grad=True)
        assert t.requires_grad and t.is_leaf and tuple(t.shape) == (4,)
        assert not L.normal(L.zeros(2, 3), 1.0).requires_grad
        with pytest.raises(TypeError):
            L.normal(L.zeros(2, 3), 1.0, requires_grad=True)


def test_parameter_shares_the_version_counter(fresh) -> None:
    for L in (E, torch):
        t = L.zeros(3)
        t.add_(1)
        p = L.nn.Parameter(t)
        t.add_(1)
        assert p._version == 2


# ----------------------------------------------------------- the failing line


def test_inplace_error_reports_its_failing_line(tmp_path: Path) -> None:
    prog = tmp_path / "inplace.py"
    prog.write_text(textwrap.dedent("""\
        import torch

        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.add_(1)
        y.sum().backward()
    """))
    r = run_program(str(prog), "torch")
    t = run_program(str(prog), "torch", backend="torch")
    assert (r.status, r.error_kind, r.line, r.node_line) == ("error", "inplace", 6, 4)
    assert (t.error_kind, t.line) == ("inplace", 6)
    assert r.error.split(" Hint:")[0] == t.error.split(" Hint:")[0]  # torch ran in anomaly mode
