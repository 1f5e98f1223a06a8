"""Unit tests of the stale-graph model (analysis/staleness.py, TL007): which
parameters an optimizer updates, which a node saves, and what a step makes
stale. The fixtures prove the verdicts on PyTorch and the engine; these pin
down the shapes in between, each both ways."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.findings import StaleHazard
from tapelint.analysis.model import OptimizerRef
from tapelint.analysis.staleness import is_optimizer_class
from tapelint.settings import Settings

GAN_STEP = """
import torch
import torch.nn as nn
D = {d}
opt = {opt}
score = D(torch.randn(5, 3))
l1 = score.mean()
l1.backward(retain_graph=True)
opt.step()
l2 = (score * 2).mean()
l2.backward()
"""


def analyse(code: str) -> ModuleAnalysis:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis


def stale(code: str) -> list[StaleHazard]:
    return [h for h in analyse(code).results() if isinstance(h, StaleHazard)]


def gan(d: str, opt: str = "torch.optim.SGD(D.parameters(), lr=0.1)") -> list[StaleHazard]:
    return stale(GAN_STEP.format(d=d, opt=opt))


@pytest.mark.parametrize(
    ("layer", "saves"),
    [
        # measured in reference/torch/: a Linear saves its weight only for a tracked input's gradient
        ("nn.Linear(3, 1)", False),
        ("nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))", True),
        ("nn.Sequential(nn.ReLU(), nn.Linear(3, 1))", False),
        ("nn.Conv1d(5, 1, 1)", True),
        ("nn.LayerNorm(3)", True),
        ("nn.Embedding(10, 3)", False),
    ],
)
def test_what_a_layer_saves_for_an_untracked_input(layer: str, saves: bool) -> None:
    assert bool(gan(layer)) is saves


def test_optimizer_over_other_modules_makes_nothing_stale() -> None:
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    assert not gan(d, opt="torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)")
    assert gan(d, opt="torch.optim.SGD([{'params': D.parameters(), 'lr': 0.1}], lr=0.1)")


def test_chain_of_parameters_is_followed() -> None:
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    code = "from itertools import chain\n" + GAN_STEP.format(
        d=d, opt="torch.optim.Adam(chain(nn.Linear(1, 1).parameters(), D.parameters()))")
    assert stale(code)


def test_a_user_model_covers_its_submodules_and_parameters() -> None:
    code = """
    import torch
    import torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(3, 4)
            self.scale = nn.Parameter(torch.ones(4))
        def forward(self, x):
            return self.body(x) * self.scale
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    out = net(torch.randn(2, 3))
    out.sum().backward(retain_graph=True)
    opt.step()
    (out * 3).sum().backward()
    """
    found = stale(code)
    assert len(found) == 1
    assert found[0].module == "net"  # the call through which its forward ran


def test_a_fresh_forward_each_iteration_is_not_stale() -> None:
    code = """
    import torch
    import torch.nn as nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(3):
        loss = model(torch.randn(2, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()
    """
    assert not stale(code)


def test_lbfgs_closure_walks_its_own_graph_before_the_update() -> None:
    code = """
    import torch
    import torch.nn as nn
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.LBFGS(model.parameters())
    for i in range(3):
        def closure():
            opt.zero_grad()
            outputs = []
            for t in range(2):
                outputs += [model(torch.randn(2, 3))]
            loss = torch.cat(outputs).pow(2).mean()
            loss.backward()
            return loss
        opt.step(closure)
    """
    assert not stale(code)


def test_scaler_step_steps_its_optimizer() -> None:
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    code = GAN_STEP.format(d=d, opt="torch.optim.SGD(D.parameters(), lr=0.1)").replace(
        "opt.step()", "scaler.step(opt)")
    assert stale("scaler = torch.cuda.amp.GradScaler()\n" + code.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport torch\n"))


def test_schedulers_are_not_optimizers() -> None:
    assert is_optimizer_class("torch.optim.Adam")
    assert is_optimizer_class("torch.optim.adamw.AdamW")
    assert not is_optimizer_class("torch.optim.lr_scheduler.StepLR")
    assert not is_optimizer_class("torch.optim.swa_utils.AveragedModel")
    analysis = analyse("import torch\nopt = torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=1)\n"
                       "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n")
    assert any(isinstance(v, OptimizerRef) for v in analysis.module_env["opt"])
    assert not any(isinstance(v, OptimizerRef) for v in analysis.module_env["sched"])


def test_a_released_graph_is_the_reuse_rules_not_tl007() -> None:
    """PyTorch checks for a freed graph before a version: without retain_graph the
    second backward is TL002, with the second-backward error."""
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    code = GAN_STEP.format(d=d, opt="torch.optim.SGD(D.parameters(), lr=0.1)").replace(
        "l1.backward(retain_graph=True)", "l1.backward()")
    hazards = analyse(code).results()
    assert not [h for h in hazards if isinstance(h, StaleHazard)]
    assert [h.kind.value for h in hazards] == ["shared"]


TWIN_CRITICS = """
import torch
import torch.nn as nn
class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
    def forward(self, s, a):
        return self.body(torch.cat([s, a], dim=1))
q1, q2 = QNet(), QNet()
q1_opt = torch.optim.Adam(q1.parameters())
s, a = torch.randn(4, 3), torch.randn(4, 2)
q1_loss = q1(s, a).pow(2).mean()
q2_loss = {second}(s, a).abs().mean()
q1_loss.backward()
q1_opt.step()
q2_loss.backward()
"""


def test_instances_of_one_class_are_told_apart_by_the_call_that_ran_them() -> None:
    assert not stale(TWIN_CRITICS.format(second="q2"))
    found = stale(TWIN_CRITICS.format(second="q1"))
    assert [h.module for h in found] == ["q1"]


LIGHTNING_GAN = """
import torch
import torch.nn as nn
import lightning as L
class GAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.g = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.d = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    def training_step(self, batch, batch_idx):
        opt_g, opt_d = self.optimizers()
        d_fake = self.d(self.g(torch.randn(5, 4)))
        opt_d.zero_grad()
        self.manual_backward(self.d(batch).mean() - d_fake.mean(), retain_graph=True)
        {stepped}.step()
        opt_g.zero_grad()
        self.manual_backward(-d_fake.mean())
        opt_g.step()
    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.g.parameters())
        opt_d = torch.optim.Adam(self.d.parameters())
        return {returned}
"""


@pytest.mark.parametrize("returned", ["opt_g, opt_d", "(opt_g, opt_d)", "[opt_g, opt_d], []", "[opt_g, opt_d]",
                                      "{'optimizer': opt_g}, {'optimizer': opt_d, 'lr_scheduler': None}"])
def test_lightning_optimizers_are_what_configure_optimizers_returned(returned: str) -> None:
    """The library's `self.optimizers()` (no stand-in class): the step of `opt_d`
    updates what `configure_optimizers` built it over, and `opt_g`'s does not."""
    found = stale(LIGHTNING_GAN.format(stepped="opt_d", returned=returned))
    assert [(h.module, h.step.label) for h in found] == [("self.d", "opt_d.step()")]
    assert not stale(LIGHTNING_GAN.format(stepped="opt_g", returned=returned))


def test_a_list_of_optimizers_steps_only_what_every_element_updates() -> None:
    """A list whose literal does not say which element is which optimizer
    (built by appends): its elements are joined, so which one `opt_d` is stays
    unknown, and a step makes stale only what both would."""
    appended = "opts = []\n        opts.append(opt_g)\n        opts.append(opt_d)\n        return opts, []"
    built = LIGHTNING_GAN.replace("        return {returned}", "        " + appended)
    assert not stale(built.format(stepped="opt_d"))
    shared = built.replace("torch.optim.Adam(self.g.parameters())", "torch.optim.Adam(self.parameters())")
    assert stale(shared.format(stepped="opt_d"))


def test_a_step_of_one_of_two_optimizers_picked_by_a_branch() -> None:
    code = GAN_STEP.format(d="nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))",
                           opt="torch.optim.SGD(D.parameters(), lr=0.1)")
    either = code.replace("opt.step()", "(opt if flag else other).step()").replace(
        "\nscore = ", "\nflag = len(str(D)) > 3\nother = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)\nscore = ", 1)
    assert stale(code) and not stale(either)
    both = either.replace("nn.Linear(2, 2).parameters()", "D.parameters()")
    assert stale(both)


def test_the_step_is_named_as_written() -> None:
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    code = GAN_STEP.format(d=d, opt="torch.optim.SGD(D.parameters(), lr=0.1)").replace(
        "opt.step()", "scaler.step(opt)")
    found = stale("import torch\nscaler = torch.amp.GradScaler('cpu')\n" + code)
    assert [h.step.label for h in found] == ["scaler.step(opt)"]


def test_an_optimizer_built_by_a_helper_says_which_call_built_it() -> None:
    d = "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))"
    code = GAN_STEP.format(d=d, opt="make(D)").replace(
        "D = ", "def make(model):\n    return torch.optim.SGD(model.parameters(), lr=0.1)\nD = ", 1)
    assert [h.step.updates for h in stale(code)] == ["model.parameters(), as built by `make(D)`"]


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("scaler.step(optimizer_D)", "scaler.step(optimizer_D)"),
        ("self._update(self.opt_d, d_loss, retain=True)", "self._update(self.opt_d, d_loss, ...)"),
        ("itertools.chain(generator.parameters(), discriminator.parameters())", "itertools.chain(...)"),
        ("f('a, b', [1, 2, 3], g(h(1, 2), 3), zzzzzzzzzzzzzzzzzzzzzzz)", "f('a, b', [1, 2, 3], ...)"),
        ("update(\n    opt,\n    loss,\n)", "update( opt, loss, )"),
        ("x" * 50, "x" * 37 + "..."),
    ],
)
def test_long_expressions_are_abbreviated_at_whole_arguments(code: str, shown: str) -> None:
    assert abbreviate(code) == shown
