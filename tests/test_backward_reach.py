"""The pre-check's second stage follows a file's imported names definition
by definition (`analysis/backward_reach.py`): a module that holds a
backward in one function does not keep every file that imports another of
its names. Each test builds a small project and asks the second stage
about `main.py`; `test_precheck.py` proves on the fixtures and the torch
package that what it skips has no diagnostic."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tapelint.analysis import reads
from tapelint.lint import lint_source
from tapelint.precheck import MAX_REACHED, may_hold_hazard_in_tree
from tapelint.settings import Settings

TRAINER = (
    "import torch\n\n\n"
    "def train(model, xs, opt):\n"
    "    out = model(xs[0])\n"
    "    for x in xs:\n"
    "        out.sum().backward()\n"
    "        opt.step()\n\n\n"
    "def seed(n):\n"
    "    return n + 1\n"
)


def kept(tmp_path: Path, script: str, files: dict[str, str]) -> bool:
    """The second stage's verdict on `script` as `main.py` beside `files` (by relative path)."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    main = tmp_path / "main.py"
    main.write_text(script)
    return may_hold_hazard_in_tree(script, ast.parse(script), Settings(project_root=str(tmp_path)), str(main))


def test_another_definition_of_the_module_holding_the_backward_does_not_keep_the_file(tmp_path):
    assert not kept(tmp_path, "from trainer import seed\nprint(seed(1))\n", {"trainer.py": TRAINER})
    assert kept(tmp_path, "from trainer import train\ntrain(m, xs, opt)\n", {"trainer.py": TRAINER})


def test_the_whole_lint_skips_it(tmp_path):
    """End to end: the file is skipped, not analysed, and has no diagnostic."""
    (tmp_path / "trainer.py").write_text(TRAINER)
    script = "import torch\nfrom trainer import seed\nfor i in range(3):\n    print(seed(i))\n"
    (tmp_path / "main.py").write_text(script)
    result = lint_source(script, str(tmp_path / "main.py"), Settings(project_root=str(tmp_path)))
    assert result.skipped and not result.diagnostics


@pytest.mark.parametrize(
    "helpers",
    [
        # the same module's definition that holds it
        "from trainer import train\n\ndef fit(m, xs, opt):\n    return train(m, xs, opt)\n",
        # an alias of it
        "from trainer import train as fit\n",
        "from trainer import train\nfit = train\n",
        # a class whose method calls it, reached through its base class
        "from trainer import train\n\nclass Base:\n    def fit(self, xs):\n        train(self, xs, None)\n\n"
        "class Runner(Base):\n    pass\n\nfit = Runner\n",
        # an import in the function's body
        "def fit(m, xs, opt):\n    from trainer import train\n    train(m, xs, opt)\n",
        # the module bound as a name: the definition read on it, or any when it is passed on
        "import trainer\n\ndef fit(m, xs, opt):\n    trainer.train(m, xs, opt)\n",
        "import trainer\n\ndef fit(m, xs, opt):\n    run(trainer)\n",
        # a decorator that runs it
        "from trainer import train\n\n@train\ndef fit():\n    pass\n",
    ],
)
def test_each_way_a_name_leads_to_the_backward_keeps_the_file(tmp_path, helpers):
    files = {"trainer.py": TRAINER, "helpers.py": helpers}
    assert kept(tmp_path, "from helpers import fit\nfit(m, xs, opt)\n", files)


def test_names_that_lead_nowhere_near_it_do_not(tmp_path):
    helpers = ("from trainer import seed\n\ndef fit(m, xs, opt):\n    return seed(len(xs))\n\n"
               "def train(m, xs, opt):\n    return 0\n")  # another module's `train`: not the one with the backward
    files = {"trainer.py": TRAINER, "helpers.py": helpers}
    assert not kept(tmp_path, "from helpers import fit, train\nfit(m, xs, opt)\n", files)
    files["helpers.py"] = "import trainer\n\ndef fit(m, xs, opt):\n    return trainer.seed(len(xs))\n"
    assert not kept(tmp_path, "from helpers import fit\nfit(m, xs, opt)\n", files)


def test_re_exports_are_followed_by_name(tmp_path):
    """`from pkg import name` reads the name in `pkg/__init__.py`, and through
    its star import in the module it comes from."""
    files = {"pkg/__init__.py": "from .trainer import *\n", "pkg/trainer.py": TRAINER}
    assert kept(tmp_path, "from pkg import train\ntrain(m, xs, opt)\n", files)
    assert not kept(tmp_path, "from pkg import seed\nprint(seed(1))\n", files)
    files["pkg/__init__.py"] = "from .trainer import seed, train as fit\n"
    assert kept(tmp_path, "from pkg import fit\nfit(m, xs, opt)\n", files)
    assert not kept(tmp_path, "from pkg import seed\nprint(seed(1))\n", files)
    # a submodule imported by name is a module bound as a name: read through its attributes
    assert not kept(tmp_path, "from pkg import trainer\ntrainer.seed(1)\n", files)
    assert kept(tmp_path, "from pkg import trainer\ntrainer.train(m, xs, opt)\n", files)
    assert kept(tmp_path, "from pkg import trainer\nrun(trainer)\n", files)


@pytest.mark.parametrize(
    "script,files",
    [
        # a package bound as a name, as a value: any submodule by attribute
        ("import pkg\nrun(pkg)\n", {"pkg/__init__.py": ""}),
        # a star import of a package may bring in any submodule (`__all__`)
        ("from pkg import *\nseed(1)\n", {"pkg/__init__.py": ""}),
        # code run on import holds a backward
        ("from script import seed\nseed(1)\n", {"script.py": "def seed(n):\n    return n\nloss.backward()\n"}),
        ("from script import seed\nseed(1)\n",
         {"script.py": "def seed(n):\n    return n\nfor x in xs:\n    model(x).backward()\n"}),
        # a text CPython cannot parse (libcst may)
        ("from broken import seed\nseed(1)\n", {"broken.py": "def seed(n:\n"}),
    ],
)
def test_what_the_graph_cannot_tell_keeps_the_file(tmp_path, script, files):
    assert kept(tmp_path, script, files)


def test_more_modules_in_reach_than_the_bound_keep_the_file(tmp_path):
    files = {f"m{i}.py": f"from m{i + 1} import f\n" for i in range(MAX_REACHED + 1)}
    assert kept(tmp_path, "from m0 import f\nf()\n", files)
    assert not kept(tmp_path, f"from m{MAX_REACHED - 20} import f\nf()\n", files)


def test_a_total_reported_after_a_loop_in_reach_still_keeps_the_file(tmp_path):
    """No backward in reach leaves TL003 in an evaluation loop: an
    accumulating loop in a definition the file's names reach counts."""
    evaluation = "def evaluate(model, xs):\n    total = 0\n    for x in xs:\n        total += model(x)\n    print(total)\n"
    assert kept(tmp_path, "from evaluation import evaluate\nevaluate(m, xs)\n", {"evaluation.py": evaluation})


def test_a_skipped_file_notes_every_module_in_reach(tmp_path):
    """The result cache lints a skipped file again when any module its
    verdict looked into changes (`reads`)."""
    (tmp_path / "helpers.py").write_text("from trainer import seed\n\ndef fit(n):\n    return seed(n)\n")
    (tmp_path / "trainer.py").write_text(TRAINER)
    script = "from helpers import fit\nfit(1)\n"
    main = tmp_path / "main.py"
    with reads.recording() as noted:
        assert not may_hold_hazard_in_tree(script, ast.parse(script), Settings(project_root=str(tmp_path)), str(main))
    assert {str(tmp_path / "helpers.py"), str(tmp_path / "trainer.py")} <= set(noted)


def test_definitions_are_read_at_the_lines_cpython_numbers(tmp_path):
    """A form feed (page break) is no line break for CPython: a definition's
    text taken at the lines `str.splitlines` counts would end before its
    backward."""
    trainer = "def seed(n):\n    return n\n\x0c\ndef train(m, x):\n    m(x).sum().backward()\n"
    assert kept(tmp_path, "from trainer import train\ntrain(m, x)\n", {"trainer.py": trainer})


def test_a_package_bound_as_a_name_is_read_through_its_attributes(tmp_path):
    """`pkg.trainer.seed(1)` of `import pkg` reaches `seed` of the submodule
    `pkg.trainer`, not the package's every submodule."""
    files = {"pkg/__init__.py": "", "pkg/trainer.py": TRAINER}
    assert not kept(tmp_path, "import pkg\npkg.trainer.seed(1)\n", files)
    assert kept(tmp_path, "import pkg\npkg.trainer.train(m, xs, opt)\n", files)
    assert not kept(tmp_path, "import pkg.trainer\npkg.trainer.seed(1)\n", files)
    assert kept(tmp_path, "import pkg.trainer as t\nt.train(m, xs, opt)\n", files)
    # from a module of the project, too
    files["helpers.py"] = "import pkg\n\ndef fit(m, xs, opt):\n    return pkg.trainer.seed(len(xs))\n"
    assert not kept(tmp_path, "from helpers import fit\nfit(m, xs, opt)\n", files)
    files["helpers.py"] = "import pkg\n\ndef fit(m, xs, opt):\n    return pkg.trainer.train(m, xs, opt)\n"
    assert kept(tmp_path, "from helpers import fit\nfit(m, xs, opt)\n", files)


def test_annotations_lead_nowhere(tmp_path):
    """The analysis never evaluates an annotation: a class named only in
    one (`strategy: Strategy`) is not reached through it."""
    strategy = "class Strategy:\n    def backward(self, loss):\n        loss.backward()\n"
    helpers = ("from strategy import Strategy\n\n\ndef fit(strategy: Strategy, n: int) -> Strategy:\n"
               "    size: Strategy = n\n    return size\n")
    files = {"strategy.py": strategy, "helpers.py": helpers}
    assert not kept(tmp_path, "from helpers import fit\nfit(s, 1)\n", files)
    files["helpers.py"] = "from strategy import Strategy\n\n\ndef fit(n: int = Strategy()):\n    return n\n"
    assert kept(tmp_path, "from helpers import fit\nfit(1)\n", files)  # a default value runs


def test_a_run_worker_follows_each_name_once_and_notes_its_facts_for_every_file(tmp_path, monkeypatch):
    """In a worker of one run (one view of the disk), where a name leads is
    followed once for all the files that import it; each file's verdict
    still notes every module it rests on, for the result cache."""
    from tapelint import precheck

    monkeypatch.setattr(reads, "_run_states", None)
    reads.one_view_per_process()
    monkeypatch.setattr(precheck, "_REACHED", {})
    followed = []
    real = precheck.reach
    monkeypatch.setattr(precheck, "reach", lambda start, *rest: followed.append(start) or real(start, *rest))
    (tmp_path / "helpers.py").write_text("from trainer import seed\n\ndef fit(n):\n    return seed(n)\n")
    (tmp_path / "trainer.py").write_text(TRAINER)
    script = "from helpers import fit\nfit(1)\n"
    settings = Settings(project_root=str(tmp_path))
    noted = []
    for name in ("one.py", "two.py"):
        with reads.recording() as facts, reads.one_view():
            assert not may_hold_hazard_in_tree(script, ast.parse(script), settings, str(tmp_path / name))
        noted.append(facts)
    assert followed == [("name", str(tmp_path / "helpers.py"), "fit")]
    for facts in noted:
        assert {str(tmp_path / "helpers.py"), str(tmp_path / "trainer.py")} <= set(facts)
