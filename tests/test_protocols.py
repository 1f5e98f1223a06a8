"""Framework protocols (`analysis/protocols.py`), what a backward proves
about a root's components (`torch_calls.walked_components`), runner
objects' `.backward(loss)` and lambdas: checked on what the analysis holds
and what the rules report."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tapelint.analysis import protocols
from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.program import Program
from tapelint.lint import lint_source
from tapelint.settings import Settings


def codes(code: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(code), "t.py", Settings())
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


def hooks(code: str) -> dict[str, frozenset[str]]:
    program = Program.of(cst.parse_module(textwrap.dedent(code)), Settings())
    return {name: protocols.step_hooks(program, info) for name, info in program.classes.items()}


def test_hooks_are_read_from_the_framework_bases_through_the_projects_subclasses():
    found = hooks(
        """
        import lightning as L
        from transformers import Trainer
        from trl import DPOTrainer

        class Base(Trainer):
            def compute_loss(self, model, inputs):
                return model(**inputs).loss

        class Mine(Base):
            def compute_loss(self, model, inputs):
                return model(**inputs).loss

        class Preference(DPOTrainer):
            def compute_loss(self, model, inputs):
                return model(**inputs).loss

        class Lit(L.LightningModule):
            def training_step(self, batch, index):
                return batch.sum()

        class Manual(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False

            def training_step(self, batch, index):
                return batch.sum()

        class Plain:
            def compute_loss(self, model, inputs):
                return model(**inputs).loss
        """
    )
    assert found == {
        "Base": {"compute_loss"}, "Mine": {"compute_loss"}, "Preference": {"compute_loss"},
        "Lit": {"training_step"}, "Manual": frozenset(), "Plain": frozenset(),
    }


def test_library_class_names_follow_the_vocabulary():
    assert protocols.hooks_of_library_class("transformers.Seq2SeqTrainer") == {"compute_loss"}
    assert protocols.hooks_of_library_class("transformers.TrainerCallback") == frozenset()
    assert protocols.hooks_of_library_class("pytorch_lightning.LightningModule") == {"training_step"}
    assert protocols.hooks_of_library_class("torch.nn.Module") == frozenset()


def test_metrics_kept_by_compute_loss_across_steps_are_an_accumulation():
    source = """
        from collections import defaultdict
        from transformers import Trainer

        class MyTrainer(Trainer):
            def __init__(self, *args):
                super().__init__(*args)
                self._metrics = defaultdict(list)

            def compute_loss(self, model, inputs, return_outputs=False):
                outputs = model(**inputs)
                self._metrics["loss"].append(outputs.loss{read})
                return (outputs.loss, outputs) if return_outputs else outputs.loss
        """
    assert codes(source.format(read="")) == [("TL003", 12)]
    assert codes(source.format(read=".item()")) == []
    assert codes(source.format(read=".detach()")) == []


def test_a_backward_inside_training_step_repeats_lightnings_own():
    source = """
        import torch.nn.functional as F
        from lightning import LightningModule

        class Model(LightningModule):
            def training_step(self, batch, index):
                x, y = batch
                loss = F.mse_loss(self.net(x), y)
                {backward}
                return loss
        """
    assert codes(source.format(backward="loss.backward()")) == [("TL004", 10)]
    assert codes(source.format(backward="pass")) == []


def test_a_component_is_walked_only_if_computed_from_every_origin_of_the_root():
    source = """
        class Learner:
            def __init__(self, policy, optimizer):
                self.policy = policy
                self.optimizer = optimizer

            def update(self, batches):
                total = 0
                for obs, weights in batches:
                    values = self.policy(obs)
                    w = {weights}
                    loss = (values * w).mean() + values.pow(2).mean()
                    self.optimizer.zero_grad()
                    loss.backward()
                    total += {summed}
                return total
        """
    # `values` comes from the only model the loss is computed from: walked.
    assert codes(source.format(weights="weights.float()", summed="values.mean()")) == [("TL003", 15)]
    # Weights converted from the batch: data, never walked.
    assert codes(source.format(weights="weights.float()", summed="w")) == []
    # Weights from another unknown object: the loss may be tracked through the policy alone.
    assert codes(source.format(weights="self.weigher(weights)", summed="w")) == []
    # A second call of the same object is the same origin.
    assert codes(source.format(weights="self.policy(weights)", summed="w")) == [("TL003", 15)]
    # What goes through `.item()` is no graph.
    assert codes(source.format(weights="weights.float()", summed="values.mean().item()")) == []


def test_a_plain_functions_unknown_parameter_stays_unknown():
    assert codes(
        """
        def train(model, batches, optimizer):
            total = 0
            for x in batches:
                out = model(x)
                loss = out.pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                total += out.mean()
            return total
        """
    ) == []


def test_backward_of_a_library_runner_object_but_not_of_a_project_class():
    source = """
        class Loop:
            def __init__(self, model, runner):
                self.model = model
                self.runner = runner

            def fit(self, batches):
                for x in batches:
                    loss = self.model(x).mean()
                    self.runner.backward(loss)
                    self.runner.backward(loss)
        """
    assert codes(source) == [("TL004", 11)]
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(source.replace("def fit", "def backward"))), Settings())
    analysis.run()  # `self.backward(...)` of a class that defines it is its code, not a walk
    assert all(event.api != "runner.backward(...)" or event.scope.name.value == "backward"
               for event in analysis.events.values())


def test_a_lambda_is_interpreted_when_called():
    source = """
        import torch

        x = torch.ones(3, requires_grad=True)
        for name, f in [("double", lambda: (x * 2).sum()), ("exp", lambda: x.exp().sum())]:
            loss = f()
            loss.backward()
            {again}
        """
    assert codes(source.format(again="loss.backward()")) == [("TL004", 8)]
    assert codes(source.format(again="pass")) == []


@pytest.mark.parametrize("cls", ["GPTLMLoss", "SFT"])  # (an acronym is a class's name too: `MAML`, `PPO`)
def test_an_object_of_a_library_class_is_unknown_not_nothing(cls):
    source = """
        from somelib import {cls}

        class SFTTrainer:
            def __init__(self, model, strategy):
                self.model = model
                self.strategy = strategy
                self.loss_fn = {cls}()

            def fit(self, batches):
                loss_sum = 0
                for inputs, targets in batches:
                    gpt_loss = self.loss_fn(self.model(inputs), targets)
                    self.strategy.backward(gpt_loss * 0.5, self.model)
                    loss_sum += gpt_loss{read}
                return loss_sum
        """
    assert codes(source.format(cls=cls, read="")) == [("TL003", 15)]
    assert codes(source.format(cls=cls, read=".item()")) == []
    # A method of a library object is not known to build graph: parsed options are no model.
    assert codes(
        """
        import argparse
        import torch.nn as nn

        class Layer(nn.Linear):
            def __init__(self):
                super().__init__(4, 4)
                self.threshold = args.threshold

            def fit(self, x, epochs):
                for i in range(epochs):
                    loss = (self.forward(x) - self.threshold).pow(2).mean()
                    loss.backward()

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            args = parser.parse_args()
        """
    ) == []
