"""Objects of project classes (`calls.instantiate`, `calls.object_method`),
generators, `copy_` into a buffer, calls on one of several objects, flags a
class sets once, and the inlining reserve of a step method: checked on what
the rules report for small programs, each both ways."""

from __future__ import annotations

import textwrap

from tapelint.lint import lint_source
from tapelint.settings import Settings


def codes(code: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(code), "t.py", Settings())
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


BUFFER = """
    import torch

    class Buffer:
        def __init__(self, steps):
            self.values = torch.zeros(steps, 1)
            self.slot = 0

        def put(self, value):
            self.values[self.slot].copy_(value)
            self.slot += 1

        def batches(self):
            for start in range(0, self.values.size(0), 2):
                yield self.values[start : start + 2]

    net = torch.nn.Linear(3, 1)
    buffer = Buffer(4)
    for step in range(4):
        {collect}
        buffer.put(value)
    for epoch in range(2):
        for old in buffer.batches():
            loss = (net(torch.randn(2, 3)) - old).pow(2).mean()
            loss.backward()
    """


def test_what_a_method_stores_on_an_object_a_later_call_reads():
    """`put` copies a tracked value into the object's tensor; the generator
    `batches` slices it; every backward of the epochs walks the rollout again."""
    assert codes(BUFFER.format(collect="value = net(torch.randn(1, 3))")) == [("TL001", 20)]
    assert codes(BUFFER.format(collect="value = net(torch.randn(1, 3)).detach()")) == []


def test_a_generator_is_the_container_of_what_it_yields():
    """Each element a generator yields is its own tensor: a forward per yield
    backwarded once is fine; a tensor made once before the loop and yielded
    every time is walked again by the next element's backward. (Not yet: a
    tensor the generator itself makes once, bound to no name of the loop's
    scope, is taken for each element's own.)"""
    source = """
        import torch

        net = torch.nn.Linear(3, 1)
        batches = [torch.randn(2, 3) for _ in range(3)]
        shared = net(batches[0])

        def outputs():
            for x in batches:
                yield {produced}

        for out in outputs():
            out.sum().backward()
        """
    assert codes(source.format(produced="net(x)")) == []
    assert codes(source.format(produced="shared * x.sum()")) == [("TL001", 6)]


def test_copy_into_a_whole_tensor_keeps_the_copied_history():
    source = """
        import torch

        w = torch.nn.Parameter(torch.ones(3))
        buffer = torch.zeros(3)
        buffer.copy_({copied})
        for step in range(2):
            buffer.sum().backward()
        """
    assert codes(source.format(copied="w.exp()")) == [("TL001", 6)]
    assert codes(source.format(copied="w.exp().detach()")) == []


def test_calls_on_one_of_several_objects_are_alternatives():
    """`runner` is one of two objects: its method backwards the loss once on
    either path, never twice."""
    source = """
        import torch

        class Runner:
            def __init__(self, double):
                self.double = double

            def run(self, loss):
                if self.double:
                    (loss * 2).backward()
                else:
                    loss.backward()

        net = torch.nn.Linear(3, 1)
        for runner in (Runner(False), Runner(True)):
            loss = net(torch.randn(2, 3)).exp().mean()
            runner.run(loss)
        {again}
        """
    assert codes(source.format(again="")) == []
    assert codes(source.format(again="loss.backward()")) == [("TL002", 18)]


def test_a_flag_set_once_in_init_decides_a_test_on_it():
    """`self.manual = True` in `__init__` and nowhere else: `if model.manual:`
    takes one branch, so the loop's own backward never runs again. Assigned a
    second time, the flag decides nothing."""
    source = """
        import torch

        class Trainer:
            def fit(self, model, batches):
                for batch in batches:
                    loss = model.step(batch)
                    if not model.manual:
                        loss.backward()

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.manual = True
                self.layer = torch.nn.Linear(3, 1)

            def step(self, batch):
                loss = self.layer(batch).pow(2).mean()
                loss.backward()
                return loss
            {other}

        Trainer().fit(Net(), [torch.randn(2, 3) for _ in range(2)])
        """
    assert codes(source.format(other="")) == []
    reassigned = "def automatic(self):\n                self.manual = False"
    assert codes(source.format(other=reassigned)) == [("TL004", 9)]
    unpacked = "def automatic(self):\n                self.manual, self.steps = False, 0"
    assert codes(source.format(other=unpacked)) == [("TL004", 9)]
    starred = "def automatic(self, *flags):\n                first, *self.manual = flags"
    assert codes(source.format(other=starred)) == [("TL004", 9)]


def test_a_step_method_late_in_a_large_module_still_runs_its_helpers():
    """The module's inlining budget went to the many methods before it; the
    framework hook still interprets the helper that computes its loss."""
    helpers = "\n".join(f"    def helper_{i}(self, x):\n        return self.scale(x)\n" for i in range(160))
    callers = "\n".join(f"    def use_{i}(self, x):\n        return self.helper_{i}(x)\n" for i in range(160))
    source = (
        "from collections import defaultdict\n"
        "from transformers import Trainer\n\n"
        "class MyTrainer(Trainer):\n"
        "    def __init__(self, *args):\n"
        "        super().__init__(*args)\n"
        "        self._metrics = defaultdict(list)\n\n"
        "    def scale(self, x):\n"
        "        return x * 2\n\n"
        f"{helpers}\n{callers}\n"
        "    def _loss(self, model, inputs):\n"
        "        outputs = model(**inputs)\n"
        "        return outputs.loss, outputs.aux_loss\n\n"
        "    def compute_loss(self, model, inputs, return_outputs=False):\n"
        "        loss, aux = self._loss(model, inputs)\n"
        "        self._metrics['aux'].append(aux{read})\n"
        "        return loss + 0.01 * aux\n"
    )
    line = source.count("\n", 0, source.index("self._metrics['aux']")) + 1
    assert codes(source.format(read="")) == [("TL003", line)]
    assert codes(source.format(read=".item()")) == []
