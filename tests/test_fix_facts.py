"""What the analysis hands the fixes (`analysis.fix_facts`): the shape of an
expression (`analysis.shapes`: one tensor, or anything else) and which
optimizer steps follow each backward (`analysis.updates`), both read off
the interpreter's values, never off how anything is spelled; and the facts
are plain data that the cached results round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from fix_programs_roles import DICT_OUT, READS_IMG, user_gan

from tapelint.analysis.driver import ModuleAnalysis, analyze_module
from tapelint.analysis.findings import SharedHazard
from tapelint.analysis.fix_facts import ModuleShapes
from tapelint.analysis.shapes import ValueShape, expression_shape
from tapelint.analysis.updates import BranchRole
from tapelint.cache import decode, encode
from tapelint.diagnostics import FileResult
from tapelint.runner import lint_files
from tapelint.settings import Settings

PROGRAM = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import somelib
from transformers import AutoModelForCausalLM
w = torch.ones(4, requires_grad=True)
lstm = nn.LSTM(4, 4)
gru = nn.GRU(4, 4)
crit = nn.MSELoss()
summed = nn.L1Loss(reduction="sum")
per_sample = nn.MSELoss(reduction="none")
legacy = nn.MSELoss(reduce=False)
hf = AutoModelForCausalLM.from_pretrained("gpt2")
made = somelib.Generator()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return h, h.sum()


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, state):
        h, c = state
        return self.fc(x), (h * c, c)


net = Net()
pair = Pair()
recurrent = Recurrent()


def run(x, flag):
    a_exp = (w * x).exp()
    a_chunk = (w * x).chunk(2)
    a_item = (w * x).sum().item()
    a_lstm = lstm(x)
    a_gru = gru(x)
    a_crit = crit(w * x, x)
    a_summed = summed(w * x, x)
    a_per_sample = per_sample(w * x, x)
    a_legacy = legacy(w * x, x)
    a_mean = (w * x).mean()
    a_sum_dim = (w * x).sum(0)
    a_torch_sum = torch.sum(w * x)
    a_torch_sum_dim = torch.sum(w * x, 0)
    a_f_loss = F.mse_loss(w * x, x)
    a_f_loss_none = F.mse_loss(w * x, x, reduction="none")
    a_arith = a_crit * 0.5 + a_mean / 2
    a_broadcast = a_mean + w
    a_hf = hf(x)
    a_made = made(x)
    a_net = net(x)
    a_pair = pair(x)
    a_recurrent = recurrent(x, (w, w))
    a_state = (w * x, w.exp())
    a_dict = {"loss": a_exp}
    a_pick = a_exp if flag else 0.0
    a_pick_scalar = a_mean if flag else 0.0
    a_pick_none = a_exp if flag else None
    a_or = a_mean or 0.0
    if flag:
        a_paths = a_exp.sum()
    else:
        a_paths = 0.0
    return a_paths
"""


@pytest.fixture(scope="module")
def shapes() -> dict[str, ValueShape]:
    """Each `a_<name> = value` of `run`: the shape of the value; `read a_<name>`,
    of the name where it is read (its bindings joined, conditional ones by arm)."""
    module = cst.parse_module(PROGRAM)
    analysis = ModuleAnalysis(module, Settings())
    analysis.run()
    seen, bound = analysis.store.shapes, analysis.store.bound_shapes
    reads = ModuleShapes(seen, bound, module)
    out: dict[str, ValueShape] = {}
    for node in module.body:
        if isinstance(node, cst.FunctionDef):
            for line in node.body.body:
                stmt = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
                if isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Name):
                    name = stmt.targets[0].target.value
                    out[name] = expression_shape(stmt.value, seen, bound)
                    out["read " + name] = reads.of(cst.Name(name))
                if isinstance(stmt, cst.Return):
                    out["returned a_paths"] = expression_shape(stmt.value, seen, bound)
    return out


@pytest.mark.parametrize("name", ["a_exp", "a_net", "a_per_sample", "a_legacy", "a_sum_dim", "a_torch_sum_dim",
                                  "a_f_loss_none", "a_broadcast"])
def test_one_tensor_of_any_size(shapes, name):
    """Not known to hold one element: `reduction="none"` (or the legacy
    `reduce=False`), a reduction along a dimension, a scalar plus a vector."""
    assert shapes[name] is ValueShape.TENSOR
    assert shapes["read " + name] is ValueShape.TENSOR


@pytest.mark.parametrize("name", ["a_crit", "a_summed", "a_mean", "a_torch_sum", "a_f_loss", "a_arith"])
def test_one_tensor_of_one_element(shapes, name):
    """What made the node says so, whatever the variable is called: an
    `nn.*Loss` module reducing by mean or sum, a full reduction (method or
    function), `F.mse_loss` without `reduction`, arithmetic on such tensors."""
    assert shapes[name] is ValueShape.SCALAR
    assert shapes["read " + name] is ValueShape.SCALAR


@pytest.mark.parametrize(("name", "shape"), [
    ("a_gru", ValueShape.TUPLE), ("a_pair", ValueShape.TUPLE), ("a_state", ValueShape.TUPLE),
    ("a_lstm", ValueShape.OUTPUT_AND_TUPLE), ("a_recurrent", ValueShape.OUTPUT_AND_TUPLE)])
def test_tuples_of_tensors(shapes, name, shape):
    """An `nn.GRU`'s `(output, h)`, a user module returning two tensors, a tuple
    literal; an `nn.LSTM`'s `(output, (h, c))` and a user module returning so."""
    assert shapes[name] is shape


@pytest.mark.parametrize("name", ["a_chunk", "a_item", "a_hf", "a_made", "a_dict", "a_pick_none"])
def test_anything_else_is_not_a_tensor(shapes, name):
    """A tuple-returning op, a number, a library model's output object, what
    an unknown library object returns, a dict, `x if c else None`."""
    assert not shapes[name].tensor and not shapes["read " + name].tensor
    assert shapes[name] not in (ValueShape.SCALAR_OR_NUMBER, ValueShape.TENSOR_OR_NUMBER)


@pytest.mark.parametrize(("name", "shape"), [
    ("a_pick", ValueShape.TENSOR_OR_NUMBER), ("a_pick_scalar", ValueShape.SCALAR_OR_NUMBER),
    ("a_or", ValueShape.SCALAR_OR_NUMBER)])
def test_a_tensor_in_one_arm_and_a_number_in_the_other(shapes, name, shape):
    """The interpreter holds only the tensor (a number is no abstract value):
    the name bound to the conditional is read by its arms."""
    assert shapes[name] is shape and shapes["read " + name] is shape
    assert not shape.tensor


def test_a_name_bound_to_a_number_on_another_path_is_not_a_tensor(shapes):
    """Reading `a_paths` joins both paths to just the tensor (a number is no
    abstract value): its bindings tell the number apart."""
    assert shapes["returned a_paths"] is ValueShape.OTHER


def _shared(source: str) -> SharedHazard:
    (hazard,) = [item.hazard for item in analyze_module(cst.parse_module(source), Settings())
                 if isinstance(item.hazard, SharedHazard)]
    return hazard


@pytest.mark.parametrize("generator_first", [True, False])
def test_roles_follow_the_optimizer_stepped_after_each_backward(generator_first):
    hazard = _shared(user_gan(generator_first, "opt1"))
    first_is_generator = generator_first
    expected = (BranchRole.TRAINS_PRODUCER, BranchRole.DETACHABLE)
    assert hazard.roles == (expected if first_is_generator else expected[::-1])
    assert hazard.sample_shape is ValueShape.TENSOR


def test_a_step_in_the_caller_counts_for_a_backward_in_the_helper_it_called():
    """`backward_q(); opt1.step()`: the pattern of pix2pix-style models."""
    source = user_gan(False, "opt2").replace(
        "    opt1.zero_grad()\n    loss_q = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)\n"
        "    loss_q.backward()\n",
        "    opt1.zero_grad()\n    backward_q(out)\n").replace(
        "for step in range(3):",
        "def backward_q(out):\n    loss_q = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)\n"
        "    loss_q.backward()\n\n\nfor step in range(3):")
    assert "backward_q(out)\n    opt1.step()" in source
    hazard = _shared(source)
    assert hazard.roles == (BranchRole.DETACHABLE, BranchRole.TRAINS_PRODUCER)


def test_steps_after_two_helpers_count_for_the_backwards_of_both():
    """`backward_q(); backward_p(); opt1.step(); opt2.step()` at module level
    and in a function: each helper's backward feeds both steps."""
    helpers = (
        "def backward_q(out):\n    loss_q = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)\n"
        "    loss_q.backward()\n\n\ndef backward_p(out):\n    loss_p = bce(net_b(out), ones)\n"
        "    loss_p.backward()\n\n\n")
    source = user_gan(False, "opt2")
    head, loop = source.split("for step in range(3):")
    body = ("\n    out = net_a(torch.randn(4, 2))\n    opt1.zero_grad()\n    opt2.zero_grad()\n"
            "    backward_q(out)\n    backward_p(out)\n    opt1.step()\n    opt2.step()\n")
    for program in (head + helpers + "for step in range(3):" + body,
                    head + helpers + "def train():\n    for step in range(3):" + body.replace("\n    ", "\n        ")
                    + "\n\ntrain()\n"):
        hazard = _shared(program)
        assert hazard.roles == (BranchRole.TRAINS_PRODUCER, BranchRole.TRAINS_PRODUCER), program


def test_two_backwards_before_the_steps_share_every_step_after_them():
    """`loss_q.backward(); loss_p.backward(); opt1.step(); opt2.step()`: each
    loss feeds both optimizers, so the one over the generator makes both
    losses train the sample's producer."""
    source = user_gan(False, "opt2")
    lines = source.splitlines()
    step_b = lines.index("    opt1.step()")
    moved = lines[:step_b] + lines[step_b + 1:] + ["    opt1.step()"]
    hazard = _shared("\n".join(moved) + "\n")
    assert hazard.roles == (BranchRole.TRAINS_PRODUCER, BranchRole.TRAINS_PRODUCER)


def test_the_sample_shape_is_other_when_the_generator_returns_a_dict():
    hazard = _shared(user_gan(True, "opt2", DICT_OUT, READS_IMG))
    assert hazard.sample_shape is ValueShape.OTHER


def test_results_with_role_chosen_edits_round_trip_through_the_cache_codec(tmp_path: Path):
    (tmp_path / "t.py").write_text(user_gan(True, "opt1"))
    result = lint_files([str(tmp_path / "t.py")], Settings(unsafe_fixes=True), 1).results[0]
    assert any(f.edits for d in result.diagnostics for f in d.fixes)
    assert decode(FileResult, json.loads(json.dumps(encode(result)))) == result
