"""Results of calls the analysis cannot see into (a network built from a
config): a dict's entries are separate tensors (`store.element`), so two
losses on two entries are not a shared graph; one entry walked twice is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from tapelint.analysis.driver import ModuleAnalysis
from tapelint.runner import lint_files
from tapelint.settings import Settings

AGENT = """
    import torch

    class Agent:
        def __init__(self, config):
            self.network = config.network_fn()
            self.opt = torch.optim.Adam(self.network.parameters(), lr=1e-3)

        def step(self, batches):
            for state, adv, ret in batches:
                prediction = self.network(state)
                policy_loss = -(prediction[{policy!r}] * adv).mean()
                value_loss = (ret - prediction["v"]).pow(2).mean()
                self.opt.zero_grad()
                policy_loss.backward()
                value_loss.backward()
                self.opt.step()
"""


def findings(code: str) -> list:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis.results()


def test_two_entries_of_an_unseen_networks_output_are_two_tensors():
    """DeepRL's PPO with separate actor and critic bodies: the policy loss
    on `prediction['log_pi_a']`, the value loss on `prediction['v']`."""
    assert findings(AGENT.format(policy="log_pi_a")) == []


def test_one_entry_walked_by_two_backwards_is_shared():
    found = findings(AGENT.format(policy="v"))
    assert [type(h).__name__ for h in found] == ["SharedHazard"]


TRAIN_UTILS = """
    def train(model, loader, optimizer, accumulation):
        total_loss = 0.0
        for batch in loader:
            loss = model(**batch).loss
            total_loss += loss.float()
            loss = loss / accumulation
            loss.backward()
            optimizer.step()
        return total_loss
"""
FINETUNE = """
    from transformers import AutoModelForCausalLM
    from train_utils import train

    model = AutoModelForCausalLM.from_pretrained("some/llama")
    train(model, loader, optimizer, 4)
"""


def test_a_training_function_run_at_a_call_sums_a_tracked_loss(tmp_path):
    """llama-recipes: `train(model, ...)` called with a library model; the
    summed `loss.float()` is the loss the (rescaled) backward walks:
    reported at the call, in the caller's file. The training function
    linted alone, with `model` a parameter nobody passes there, reports
    nothing (its callers report through it)."""
    (tmp_path / "train_utils.py").write_text(textwrap.dedent(TRAIN_UTILS))
    (tmp_path / "finetune.py").write_text(textwrap.dedent(FINETUNE))
    run = lint_files([str(tmp_path / "finetune.py"), str(tmp_path / "train_utils.py")],
                     Settings(project_root=str(tmp_path)), jobs=1)
    reported = sorted((Path(r.path).name, d.code, d.range.start.line) for r in run.results for d in r.diagnostics)
    call = textwrap.dedent(FINETUNE).splitlines().index("train(model, loader, optimizer, 4)") + 1
    assert reported == [("finetune.py", "TL003", call)]


ENGINE = """
    import torch

    class Trainer:
        def __init__(self, model, config):
            self.model = model
            self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
            self._deepspeed_engine = config.plugin.shard_model(self.model)
            self.model, self.optimizer = self._deepspeed_engine.prepare(self.model, self.optimizer)

        def fit(self, batches):
            for batch in batches:
                loss = self.model(**batch).loss
                self._deepspeed_engine.backward(loss)
                {again}
                self.optimizer.step()
"""


def test_a_runner_made_by_an_unseen_call_backwards_the_loss_it_is_given():
    """LLaMA-Factory's trainer: `self._deepspeed_engine.backward(loss)` walks
    `loss`, not the engine (a call's result the analysis cannot see into):
    no reuse of the engine across steps, and the same loss backwarded twice
    still is one."""
    assert findings(ENGINE.format(again="pass")) == []
    found = findings(ENGINE.format(again="self._deepspeed_engine.backward(loss)"))
    assert [type(h).__name__ for h in found] == ["RepeatedHazard"]


SCALED = """
    import torch
    from losses import causal_lm_loss

    class Trainer:
        def __init__(self, model, batches, mesh):
            self.model = model
            self.batches = batches
            self.dp_size = mesh["dp"].{read}()
            self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

        def fit(self):
            for batch in self.batches:
                loss = causal_lm_loss(self.model, batch) * self.dp_size
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""


def test_a_count_read_off_an_unseen_object_holds_no_graph():
    """LLaMA-Factory's `self.dp_size = DistributedInterface().get_world_size(Dim.DP)`,
    which returns `self.get_device_mesh(dim).size()`: whatever the mesh is,
    `.size()` gives no graph, so the backward proves nothing tracked about
    it (the loss function is called by its imported name, no origin). A
    method the analysis does not know, called on the same object, may give
    a tensor: the loss's only origin, walked by every step's backward."""
    assert findings(SCALED.format(read="size")) == []
    assert findings(SCALED.format(read="numel")) == []
    found = findings(SCALED.format(read="loss_weight"))
    assert [type(h).__name__ for h in found] == ["HoistedHazard"]


ABSTRACT = """
    import abc
    import torch

    class BaseTrainer(abc.ABC):
        def __init__(self, model, batches, config):
            self.model = model
            self.batches = batches
            self.scale = config.loss_scale()
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        {decorator}
        def compute_loss(self, batch):
            {body}

        def fit(self):
            for batch in self.batches:
                loss = self.compute_loss(batch) * self.scale
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""


def test_an_abstract_methods_result_is_unknown_not_nothing():
    """LLaMA-Factory's `BaseTrainer.fit`: `self.compute_loss(batch)` is left to
    subclasses; taken for the `None` of its body, it left `self.scale` the
    loss's only origin, proven tracked by the backward and reported as
    hoisted. Every spelling of "left to subclasses" is unknown; a body
    that computes something is still run."""
    for decorator, body in [("@abc.abstractmethod", "pass"), ("", "..."), ("", '"""Docs."""; ...'),
                            ("", "raise NotImplementedError"), ("", 'raise NotImplementedError("subclass")')]:
        assert findings(ABSTRACT.format(decorator=decorator, body=body)) == [], (decorator, body)
    found = findings(ABSTRACT.format(decorator="", body="return self.scale * 2"))
    assert [type(h).__name__ for h in found] == ["HoistedHazard"]


META = """
    import torch
    import torch.nn.functional as F

    class MetaLearner:
        def __init__(self, learner, optimizer):
            self.learner = learner
            self.optimizer = optimizer

        def task_error(self, x, y):
            task_loss = F.cross_entropy(self.learner(x), y)
            return task_loss

        def meta_batch(self, tasks):
            valid_error = 0.0
            for (x, y), (vx, vy) in tasks:
                train_error = self.task_error(x, y)
                self.optimizer.zero_grad()
                train_error.backward()
                self.optimizer.step()
                {validation}
            print("meta-validation error", valid_error / len(tasks))
"""


def test_what_a_backward_proves_of_one_call_holds_at_another_call_of_the_same_code():
    """learn2learn's MAML example: `fast_adapt` runs for meta-training (its
    error backwarded, which proves an unseen learner's output tracked) and
    again for meta-validation, never backwarded: the same code makes a
    tracked error there too, and summing it keeps every task's graph. Under
    `no_grad`, or read out as a number, the second call keeps nothing."""
    found = findings(META.format(validation="valid_error += self.task_error(vx, vy)"))
    assert [type(h).__name__ for h in found] == ["AccumulationHazard"]
    # (named as the `+=` adds it, not as the function called for it made it)
    named = findings(META.format(validation="error = self.task_error(vx, vy)\n                valid_error += error"))
    assert [h.value for h in named] == ["error"]
    assert findings(META.format(validation="valid_error += self.task_error(vx, vy).item()")) == []
    no_grad = "with torch.no_grad():\n                    valid_error += self.task_error(vx, vy)"
    assert findings(META.format(validation=no_grad)) == []



REWRAPPED = Path(__file__).parent.parent / "fixtures" / "neg_tl001_model_rewrapped_by_a_plugin.py"


def test_a_module_bound_back_to_its_own_name_stays_a_module():
    """LLaMA-Factory's `model = PeftPlugin(name)(model, ...)`, `model =
    apply_kernels(model, cfg)`: a call the analysis cannot see into, given
    the model and bound back to the model's name, wraps it; taken for a
    tensor made once from the parameters, every step's loss (another such
    call given the model) walked it again: a false TL001 at the launcher.
    What such a call gives under another name may be a tensor, and made
    before the loop it still is a hoisted one."""
    code = REWRAPPED.read_text()
    assert findings(code) == []
    hoisted = code.replace('model = Plugin("kernels")(model, fused=True)',
                           'features = Plugin("kernels")(model, fused=True)')
    hoisted = hoisted.replace('loss = Plugin("mse")(model, x, y)', 'loss = Plugin("mse")(features, x, y)')
    assert hoisted != code
    assert [type(h).__name__ for h in findings(hoisted)] == ["HoistedHazard"]
