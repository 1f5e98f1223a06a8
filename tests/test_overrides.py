"""An inherited method of another module's class is analysed again for a
subclass only when the subclass can change what it does
(`analysis/overrides.py`): analysed on its own, it repeats the base
module's analysis in every file that subclasses the base."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from tapelint.analysis.overrides import unchanged_inherited
from tapelint.analysis.program import Program
from tapelint.analysis.syntax import forget
from tapelint.lint import lint_source
from tapelint.settings import Settings

BASE = """\
import torch


def log(trainer):
    return trainer


class Base:
    def __init__(self, model):
        self.model = model
        self.scale = 1.0

    def plain(self, x):
        return self.helper(x) * 2

    def helper(self, x):
        return x + 1

    def hooked(self, x):
        return self.hook(x)

    def hook(self, x):
        return x

    def escapes(self):
        return log(self)

    def scaled(self, x):
        return self.model(x) * self.scale

    def writes(self, x):
        self.last = x

    def reads_written(self):
        return self.cached
"""


def unchanged(tmp_path: Path, subclass: str) -> set[str]:
    (tmp_path / "base.py").write_text(BASE)
    source = "from base import Base\n\n\n" + textwrap.dedent(subclass)
    path = tmp_path / "train.py"
    path.write_text(source)
    program = Program.root(cst.parse_module(source), Settings(project_root=str(tmp_path)), str(path))
    try:
        return {fn.name.value for fn in unchanged_inherited(program, program.classes["Sub"])}
    finally:
        program.release()
        forget()


INHERITED = {"plain", "helper", "hooked", "hook", "escapes", "scaled", "writes", "reads_written"}


@pytest.mark.parametrize(
    "subclass,changed",
    [
        ("class Sub(Base):\n    pass\n", {"escapes"}),  # `log(self)`: anything may happen to it
        # overriding a method changes every inherited method that reaches it through
        # `self` (and the overridden method is the subclass's own)
        ("class Sub(Base):\n    def hook(self, x):\n        return x * 3\n", {"escapes", "hooked", "hook"}),
        ("class Sub(Base):\n    def helper(self, x):\n        return x\n", {"escapes", "plain", "helper"}),
        # a class attribute of the same name as an attribute the base reads
        ("class Sub(Base):\n    scale = 2.0\n", {"escapes", "scaled"}),
        # an attribute the subclass assigns, which the base reads
        ("class Sub(Base):\n    def fill(self):\n        self.cached = 1\n", {"escapes", "reads_written"}),
        # ... also when the subclass's method calls its first parameter otherwise
        ("class Sub(Base):\n    @classmethod\n    def rescale(cls):\n        cls.scale = 2.0\n",
         {"escapes", "scaled"}),
        # an attribute the base assigns, which the subclass reads
        ("class Sub(Base):\n    def last_seen(self):\n        return self.last\n", {"escapes", "writes"}),
        # its own `__init__` may pass the base other arguments: what the base's assigns differs
        ("class Sub(Base):\n    def __init__(self, model):\n        super().__init__(model.half())\n",
         {"escapes", "scaled"}),
    ],
    ids=["nothing", "override-reached", "override-helper", "class-attribute", "assigns-what-base-reads",
         "assigns-through-cls", "reads-what-base-assigns", "own-init"],
)
def test_what_a_subclass_can_change_is_analysed_again(tmp_path, subclass, changed):
    assert unchanged(tmp_path, subclass) == INHERITED - changed


@pytest.mark.parametrize(
    "subclass",
    [
        "class Sub(Base):\n    def register(self):\n        return log(self)\n",  # its own code lets `self` escape
        "class Sub(Base):\n    def dyn(self, name):\n        return getattr(self, name)\n",
        "@some_decorator\nclass Sub(Base):\n    pass\n",
        "class Sub(Base, metaclass=Meta):\n    pass\n",
    ],
    ids=["own-escape", "getattr", "decorated", "metaclass"],
)
def test_what_the_syntax_cannot_bound_keeps_every_inherited_method(tmp_path, subclass):
    assert unchanged(tmp_path, subclass) == set()


TRAINER = """\
import torch


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(3, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, batches):
        for batch in batches:
            loss = self.loss(batch)
            loss.backward()
            self.optimizer.step()

    def loss(self, batch):
        return self.model(batch).pow(2).mean()

    def evaluate(self, batches):
        total = 0
        for batch in batches:
            total += self.model(batch).sum()
        print("loss", total)
"""


def test_a_hazard_of_an_unchanged_inherited_method_is_the_base_files(tmp_path):
    """The base's own evaluation loop (TL003) is the base file's finding,
    not one of each subclass that leaves it as it is: a subclass's file
    alone reports nothing of it, as before its analysis left the method out.
    (An override that a base's loop calls is analysed in the subclass with
    that loop: `test_inherited_loops`.)"""
    (tmp_path / "trainer.py").write_text(TRAINER)
    settings = Settings(project_root=str(tmp_path))
    base = lint_source(TRAINER, str(tmp_path / "trainer.py"), settings)
    assert [(d.code, d.range.start.line) for d in base.diagnostics] == [("TL003", 21)]
    plain = "from trainer import Trainer\n\n\nclass Quiet(Trainer):\n    pass\n"
    assert lint_source(plain, str(tmp_path / "quiet.py"), settings).diagnostics == ()
