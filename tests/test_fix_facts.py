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
from tapelint.analysis.shapes import ValueShape, expression_shape
from tapelint.analysis.updates import BranchRole
from tapelint.cache import decode, encode
from tapelint.diagnostics import FileResult
from tapelint.runner import lint_files
from tapelint.settings import Settings

PROGRAM = """\
import torch
import torch.nn as nn
import somelib
from transformers import AutoModelForCausalLM
w = torch.ones(4, requires_grad=True)
lstm = nn.LSTM(4, 4)
crit = nn.MSELoss()
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


net = Net()
pair = Pair()


def run(x, flag):
    a_exp = (w * x).exp()
    a_chunk = (w * x).chunk(2)
    a_item = (w * x).sum().item()
    a_lstm = lstm(x)
    a_crit = crit(w * x, x)
    a_hf = hf(x)
    a_made = made(x)
    a_net = net(x)
    a_pair = pair(x)
    a_dict = {"loss": a_exp}
    a_pick = a_exp if flag else 0.0
    if flag:
        a_paths = a_exp.sum()
    else:
        a_paths = 0.0
    return a_paths
"""


@pytest.fixture(scope="module")
def shapes() -> dict[str, ValueShape]:
    """Each `a_<name> = value` of `run`: the shape of the value, and of the name read at the end."""
    module = cst.parse_module(PROGRAM)
    analysis = ModuleAnalysis(module, Settings())
    analysis.run()
    seen, bound = analysis.store.shapes, analysis.store.bound_shapes
    out: dict[str, ValueShape] = {}
    for node in module.body:
        if isinstance(node, cst.FunctionDef):
            for line in node.body.body:
                stmt = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
                if isinstance(stmt, cst.Assign) and isinstance(stmt.targets[0].target, cst.Name):
                    out[stmt.targets[0].target.value] = expression_shape(stmt.value, seen, bound)
                if isinstance(stmt, cst.Return):
                    out["returned a_paths"] = expression_shape(stmt.value, seen, bound)
    return out


@pytest.mark.parametrize("name", ["a_exp", "a_crit", "a_net"])
def test_one_tensor(shapes, name):
    assert shapes[name] is ValueShape.TENSOR


@pytest.mark.parametrize("name", ["a_chunk", "a_item", "a_lstm", "a_hf", "a_made", "a_pair", "a_dict", "a_pick"])
def test_anything_else_is_not_a_tensor(shapes, name):
    """A tuple-returning op, a number, an LSTM's tuple, a library model's
    output object, what an unknown library object returns, a user module
    returning a tuple, a dict, and `x if c else 0.0`."""
    assert shapes[name] is ValueShape.OTHER


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
