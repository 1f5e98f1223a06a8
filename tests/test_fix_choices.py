"""Which fixes get an edit (issue 9), each case with a positive and a
negative test: the GAN detach chosen by role, never detaching a backward's
only way to its parameters, never `.detach()`/`.item()` on what may not be
a tensor, edits only in the scope the user reads, and no remove-backward
edit when the two backwards may be exclusive. `test_fix_execution.py` runs
every edit that is offered."""

from __future__ import annotations

from pathlib import Path

import pytest
from fix_programs import D_STEP, G_STEP, GAN, ONLY_PATH
from fix_programs_roles import (
    DICT_OUT,
    MAYBE_DICT_OUT,
    READS_FIRST,
    READS_IMG,
    READS_TENSOR,
    TUPLE_OUT,
    user_gan,
)
from fix_programs_shapes import (
    CARRIED_CASES,
    FORWARD_CASES,
    MANY_CASES,
    NUMBER_CASES,
    SCALAR_CASES,
    accumulation,
    carried,
    forward_state,
)

from tapelint.diagnostics import Diagnostic, Fix, FixKind, Safety, Semantics
from tapelint.document import lint_document
from tapelint.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

def _diagnostics(source: str, semantics: str = "torch") -> tuple[Diagnostic, ...]:
    return lint_document(source, "t.py", Settings(semantics=Semantics(semantics), unsafe_fixes=True)).diagnostics


def _fix(source: str, code: str, kind: FixKind) -> Fix:
    (diagnostic,) = [d for d in _diagnostics(source) if d.code == code]
    (fix,) = [f for f in diagnostic.fixes if f.kind is kind]
    return fix


def _edited_lines(source: str, fix: Fix) -> list[str]:
    lines = source.splitlines()
    return [lines[e.range.start.line - 1].strip() for e in fix.edits]


def test_gan_detach_goes_to_the_discriminator_loss_when_it_runs_first():
    source = GAN.format(first=D_STEP, second=G_STEP)
    fix = _fix(source, "TL002", FixKind.DETACH)
    assert fix.safety is Safety.UNSAFE and [e.new_text for e in fix.edits] == ["fake.detach()"]
    assert _edited_lines(source, fix) == [D_STEP.splitlines()[1].strip()]
    assert "`d_loss`" in fix.description


def test_gan_detach_never_goes_to_the_generator_loss_when_it_runs_first():
    """The generator's step first: its loss is the first backward, and the
    old choice ("the first loss's branch") would have frozen the generator."""
    source = GAN.format(first=G_STEP, second=D_STEP)
    fix = _fix(source, "TL002", FixKind.DETACH)
    assert _edited_lines(source, fix) == [D_STEP.splitlines()[1].strip()]
    assert all("g_loss" not in line for line in _edited_lines(source, fix))
    assert "`d_loss`" in fix.description and "`g_loss`" not in fix.description


def test_gan_detach_has_no_edit_when_both_losses_train_the_generator():
    both = G_STEP.replace("g_loss", "g2_loss")
    source = GAN.format(first=G_STEP, second=both)
    fix = _fix(source, "TL002", FixKind.DETACH)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits


def test_no_detach_of_a_value_that_is_the_backward_only_way_to_a_parameter():
    fix = _fix(ONLY_PATH, "TL001", FixKind.DETACH)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits
    assert _fix(ONLY_PATH, "TL001", FixKind.RECOMPUTE).edits  # the fix that keeps the gradient


def test_detach_of_a_value_when_the_backward_reaches_another_parameter():
    source = ONLY_PATH.replace("(feats * 2)", "(feats * w)")
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert fix.safety is Safety.UNSAFE and [e.new_text for e in fix.edits] == ["w.exp().detach()"]


def test_no_branch_detach_when_the_first_loss_has_nothing_else_to_train():
    source = (FIXTURES / "tl002_shared_exp_two_losses.py").read_text()
    fix = _fix(source, "TL002", FixKind.DETACH)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits  # `l1 = h.sum()` would have no graph


TUPLE = """\
import torch
import torch.nn as nn
enc = nn.Linear(4, 4)
w = torch.ones(2, requires_grad=True)
x = torch.randn(3, 4)
mu, logvar = enc(x).chunk(2, dim=1)
for step in range(3):
    loss = (mu * w).sum() + logvar.sum()
    loss.backward()
"""


def test_no_detach_on_a_tuple():
    fix = _fix(TUPLE, "TL001", FixKind.DETACH)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits


def test_detach_on_an_element_of_the_tuple():
    source = TUPLE.replace("mu, logvar = enc(x).chunk(2, dim=1)", "mu = enc(x).chunk(2, dim=1)[0]").replace(
        " + logvar.sum()", "")
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert [e.new_text for e in fix.edits] == ["enc(x).chunk(2, dim=1)[0].detach()"]


DICT_TOTAL = """\
import torch
import torch.nn as nn
model = nn.Linear(2, 1)
def step(x):
    out = model(x).sum()
    return {"loss": out}
history = []
for i in range(3):
    result = step(torch.randn(4, 2))
    result["loss"].backward()
    history.append(result)
print(len(history))
"""


def test_no_item_or_detach_on_what_a_user_function_returns():
    (diagnostic,) = _diagnostics(DICT_TOTAL)
    assert diagnostic.code == "TL003"
    assert all(f.safety is Safety.DISPLAY_ONLY and not f.edits for f in diagnostic.fixes)


def test_item_on_a_loss_the_user_function_returns_by_name():
    source = DICT_TOTAL.replace('return {"loss": out}', "return out").replace('result["loss"]', "result").replace(
        "result = step(torch.randn(4, 2))", "result = model(torch.randn(4, 2)).sum()")
    (diagnostic,) = _diagnostics(source)
    item = [f for f in diagnostic.fixes if f.kind is FixKind.ITEM][0]
    assert item.safety is Safety.SAFE and [e.new_text for e in item.edits] == ["result.item()"]


FORWARD = """\
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
    def forward(self, x):
        h = self.fc(x).exp()
        return h
net = Net()
w = torch.ones(2, requires_grad=True)
out = net(torch.randn(3, 2))
for step in range(3):
    loss = (out * w).sum()
    loss.backward()
"""


def test_no_edit_inside_the_callee_that_created_the_value():
    (diagnostic,) = _diagnostics(FORWARD)
    assert diagnostic.code == "TL001"
    assert all(not f.edits for f in diagnostic.fixes)  # `Net.forward` is not the statement the user reads


def test_edit_at_the_statement_that_creates_the_value_in_the_callers_scope():
    source = FORWARD.replace("out = net(torch.randn(3, 2))", "out = net.fc(torch.randn(3, 2)).exp()")
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert _edited_lines(source, fix) == ["out = net.fc(torch.randn(3, 2)).exp()"]
    recompute = _fix(source, "TL001", FixKind.RECOMPUTE)
    assert _edited_lines(source, recompute)[0] == "out = net.fc(torch.randn(3, 2)).exp()"


def test_cache_built_in_init_is_detached_there():
    source = (FIXTURES / "tl001_self_cached_in_init.py").read_text()
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert [e.new_text for e in fix.edits] == ["torch.sigmoid(self.gate_logits).detach()"]


EXCLUSIVE = """\
import sys
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (w.exp() * w).sum()
if sys.version_info >= (3, 8):
    loss.backward()
if sys.version_info < (3, 8):
    loss.backward()
"""


def test_no_remove_edit_when_the_two_backwards_may_be_exclusive():
    fix = _fix(EXCLUSIVE, "TL004", FixKind.REMOVE)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits


def test_remove_edit_when_the_first_backward_encloses_the_second():
    source = EXCLUSIVE.replace("if sys.version_info >= (3, 8):\n    loss.backward()\n", "loss.backward()\n")
    fix = _fix(source, "TL004", FixKind.REMOVE)
    assert fix.safety is Safety.UNSAFE and len(fix.edits) == 1


def test_messages_quote_the_expression_to_change_with_its_parentheses():
    source = (
        "import torch\nw = torch.ones(2, requires_grad=True)\ntotal = 0.0\nn = 4\nfor step in range(3):\n"
        "    loss = (w * w).sum()\n    loss.backward()\n    total += loss / n\nprint(total)\n"
    )
    (diagnostic,) = _diagnostics(source)
    assert "`(loss / n).item()`" in diagnostic.message and "`(loss / n).detach()`" in diagnostic.message
    assert {f.description.split(",")[0] for f in diagnostic.fixes} == {
        "accumulate `(loss / n).item()`", "accumulate `(loss / n).detach()`"}
    detach = [f for f in diagnostic.fixes if f.kind is FixKind.DETACH][0]
    assert [e.new_text for e in detach.edits] == ["(loss / n).detach()"]
    (plain,) = _diagnostics(source.replace("loss / n", "loss"))
    assert "`loss.item()`" in plain.message


ALTERNATIVES = """\
import sys
import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([3.0, 4.0], requires_grad=True)
feats = w.exp()
for step in range(3):
    if len(sys.argv) > 5:
        loss = (feats * 2).sum()
    else:
        loss = (feats * v).sum()
    loss.backward()
"""


def test_no_detach_when_one_alternative_of_the_root_reaches_parameters_only_through_it():
    fix = _fix(ALTERNATIVES, "TL001", FixKind.DETACH)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits  # under the `if`, `loss` would have no graph


def test_detach_when_every_alternative_of_the_root_reaches_another_parameter():
    source = ALTERNATIVES.replace("(feats * 2)", "(feats * w)")
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert [e.new_text for e in fix.edits] == ["w.exp().detach()"]


# Roles from the analysis, not from names: `net_a` is the generator and
# `net_b` the discriminator only by what the program does with them.
def _detach_lines(source: str) -> tuple[Fix, list[str]]:
    fix = _fix(source, "TL002", FixKind.DETACH)
    return fix, _edited_lines(source, fix)


@pytest.mark.parametrize("generator_first", [True, False], ids=["generator-first", "discriminator-first"])
@pytest.mark.parametrize("a_optimizer", ["opt1", "opt2"])
def test_branch_detach_goes_to_the_loss_whose_optimizer_steps_only_what_it_reaches_without_the_sample(
        generator_first, a_optimizer):
    source = user_gan(generator_first, a_optimizer)
    fix, lines = _detach_lines(source)
    assert fix.safety is Safety.UNSAFE and [e.new_text for e in fix.edits] == ["out.detach()"]
    assert lines == ["loss_q = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)"]
    assert "`loss_q`" in fix.description


@pytest.mark.parametrize("generator_first", [True, False], ids=["generator-first", "discriminator-first"])
def test_branch_detach_never_goes_to_the_loss_that_trains_the_sample_producer(generator_first):
    """Rename the losses and optimizers so that spelling points the other way:
    the generator's own loss (`d_loss`, stepped by `opt_d`) still gets nothing."""
    source = user_gan(generator_first, "opt1").replace("loss_p", "d_loss").replace("loss_q", "g_loss").replace(
        "opt1", "opt_d").replace("opt2", "opt_g")
    fix, lines = _detach_lines(source)
    assert lines == ["g_loss = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)"]
    assert "`g_loss`" in fix.description and "`d_loss`" not in fix.description


def test_no_branch_detach_when_the_discriminator_optimizer_also_steps_the_generator():
    """One optimizer over both nets after the discriminator's loss: that loss
    reaches the generator's parameters only through the sample, and trains them."""
    source = user_gan(True, "opt2").replace(
        "opt1 = torch.optim.SGD(net_b.parameters()", "opt1 = torch.optim.SGD(list(net_a.parameters()) + "
                                                     "list(net_b.parameters())")
    fix, _ = _detach_lines(source)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits
    assert "must not train" in fix.description  # no loss is named


def test_no_branch_detach_when_no_optimizer_steps_after_either_backward():
    source = user_gan(True, "opt2").replace("opt1.step()", "pass").replace("opt2.step()", "pass")
    fix, _ = _detach_lines(source)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits


@pytest.mark.parametrize("returns,reads", [(TUPLE_OUT, READS_FIRST), (DICT_OUT, READS_IMG),
                                           (MAYBE_DICT_OUT, READS_TENSOR)], ids=["tuple", "dict", "maybe-dict"])
def test_no_branch_detach_edit_unless_the_generator_returns_a_tensor(returns, reads):
    """The role is known (the description names `loss_q`), but what the loss
    is given is not proven a tensor: a tuple or a dict (the shared tensor is
    inside it), or a value that is a dict on some calls (`.detach()` on `out`
    could raise: the same program returning only the tensor gets the edit)."""
    source = user_gan(True, "opt2", returns, reads)
    fix, _ = _detach_lines(source)
    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits
    assert "`loss_q`" in fix.description


# --- `.item()` only on what the analysis knows holds one element -------------------

@pytest.mark.parametrize(("setup", "value"), SCALAR_CASES)
def test_item_on_a_value_that_holds_one_element_whatever_it_is_called(setup, value):
    """What made the node decides, not the spelling: the value is `q`."""
    fix = _fix(accumulation(setup, value=value), "TL003", FixKind.ITEM)
    assert fix.safety is Safety.SAFE and [e.new_text for e in fix.edits] == ["q.item()"]


@pytest.mark.parametrize(("setup", "value", "backward"), MANY_CASES)
def test_no_item_on_a_loss_of_many_elements(setup, value, backward):
    """A tensor named `loss` that is not a scalar: `.item()` would raise, so the
    item fix is a suggestion and `.detach()` (valid on any tensor) is the edit."""
    source = accumulation(setup, name="loss", value=value, backward=backward)
    (diagnostic,) = [d for d in _diagnostics(source) if d.code == "TL003"]
    item = [f for f in diagnostic.fixes if f.kind is FixKind.ITEM][0]
    detach = [f for f in diagnostic.fixes if f.kind is FixKind.DETACH][0]
    assert not item.edits
    assert [e.new_text for e in detach.edits] == ["loss.detach()"]
    assert diagnostic.fixes[0] is detach  # the one with an edit comes first


@pytest.mark.parametrize(("added", "edit"), NUMBER_CASES)
def test_a_scalar_or_a_number_is_read_out_with_float(added, edit):
    """`.item()` and `.detach()` fail on the number; `float(v)` works on both
    and means what `.item()` means on a one-element tensor."""
    source = accumulation(value="F.mse_loss(model(x), y)", added=added)
    (diagnostic,) = [d for d in _diagnostics(source) if d.code == "TL003"]
    item = [f for f in diagnostic.fixes if f.kind is FixKind.ITEM][0]
    detach = [f for f in diagnostic.fixes if f.kind is FixKind.DETACH][0]
    assert item.safety is Safety.SAFE and [e.new_text for e in item.edits] == [edit]
    assert not detach.edits


def test_a_name_bound_to_a_scalar_or_a_number_is_read_out_with_float():
    source = accumulation(value="F.mse_loss(model(x), y)", added="term").replace(
        "    total += term", "    term = q if step % 2 else 0.0\n    total += term")
    item = _fix(source, "TL003", FixKind.ITEM)
    assert [e.new_text for e in item.edits] == ["float(term)"]
    assert not _fix(source, "TL003", FixKind.DETACH).edits


@pytest.mark.parametrize("added", ["q if step % 2 else None", "q if step % 2 else model(x)"])
def test_no_edit_on_a_tensor_or_something_else(added):
    """`None` (or a tensor of any size) in the other arm: neither `float(v)` nor
    `.item()` nor `.detach()` is valid on every value."""
    (diagnostic,) = [d for d in _diagnostics(accumulation(value="F.mse_loss(model(x), y)", added=added))
                     if d.code == "TL003"]
    detach = [f for f in diagnostic.fixes if f.kind is FixKind.DETACH][0]
    item = [f for f in diagnostic.fixes if f.kind is FixKind.ITEM][0]
    assert not item.edits
    assert bool(detach.edits) is added.endswith("model(x)")  # two tensors: `.detach()` is valid on both


def test_detach_where_hoisted_goes_on_the_tensor_arm_of_a_conditional():
    """TL001's `.detach()` edits the expression that creates the node: in
    `feats = w.exp() if c else 0.0` that is the tensor arm, never the number."""
    source = ONLY_PATH.replace("(feats * 2)", "(feats * w)").replace("feats = w.exp()",
                                                                   "feats = w.exp() if len(w) else 0.0")
    fix = _fix(source, "TL001", FixKind.DETACH)
    assert [e.new_text for e in fix.edits] == ["w.exp().detach()"]
    assert [e.range.start.column for e in fix.edits] == [source.splitlines()[2].index("w.exp()")]


# --- the carried state's detach shaped after what the analysis saw -----------------

@pytest.mark.parametrize(("setup", "state", "start", "unpack", "call", "out", "edit"), CARRIED_CASES)
def test_carried_state_detach_follows_the_layer_the_analysis_saw(setup, state, start, unpack, call, out, edit):
    """An `nn.GRU`/`RNN` returns `(output, h)`, an `nn.LSTM` `(output, (h, c))`,
    a `GRUCell` `h`, an `LSTMCell` `(h, c)`: the edit detaches each tensor."""
    source = carried(setup, state, start, unpack, call, out)
    fix = _fix(source, "TL005", FixKind.DETACH)
    assert edit in "\n".join(e.new_text for e in fix.edits)


@pytest.mark.parametrize(("layer", "body", "start", "edit"), FORWARD_CASES)
def test_carried_state_returned_by_a_project_forward(layer, body, start, edit):
    """What the project module's `forward` returns in the state's position:
    a tensor, an `(h, c)` tuple. A state that starts as a tuple and comes back
    as a tensor, or starts as a library's object, gets no edit."""
    source = forward_state(layer, body, start)
    (diagnostic,) = [d for d in _diagnostics(source) if d.code == "TL005"]
    (fix,) = [f for f in diagnostic.fixes if f.kind is FixKind.DETACH]
    if edit is None:
        assert not fix.edits
    else:
        assert edit in "\n".join(e.new_text for e in fix.edits)
