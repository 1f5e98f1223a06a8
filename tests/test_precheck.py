"""The pre-check may skip a file only if full analysis of that file finds
nothing: proven here, for its textual stage and its second stage on the
file's tree together, on the fixtures and on the installed torch package
(about 1.2 million lines of real PyTorch code)."""

from __future__ import annotations

import ast
import importlib.util
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.precheck import may_hold_hazard, may_hold_hazard_in_tree
from tapelint.settings import Settings

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures").glob("*.py"))
STRICT = Settings(semantics=Semantics.STRICT)


def _hazards_when_not_prechecked(path: str) -> tuple[str, list[str]]:
    """Full analysis of a file the pre-check skips (strict: the widest profile)."""
    source = Path(path).read_text(encoding="utf-8", errors="replace")
    if may_hold_hazard(source, STRICT, path):  # with the path: what the file imports counts too
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return path, []  # CPython's refusal: linted whole, as the lint does
        if may_hold_hazard_in_tree(source, tree, STRICT, path):
            return path, []
    result = lint_source(source, path, STRICT, precheck=False)
    return path, [f"{d.code}:{d.range.start.line}" for d in result.diagnostics if d.code != "TL900"]


@pytest.mark.parametrize(
    "code,expected",
    [
        ("class F(torch.autograd.Function):\n    def backward(ctx, g):\n        return g\n", False),
        ("import torch\nfor x in xs:\n    total += x\n", False),
        ("loss.backward()\n", True),
        ("self.manual_backward(loss)\n", True),
        ("from torch import autograd\ng = autograd.grad(y, x)\n", True),
        ("from torch.autograd import grad\ng = grad(y, x)\n", True),
        ("import torch.autograd as ag\ng = ag.grad(y, x)\n", True),
        ("m = nn.Linear(2, 2)\nfor x in xs:\n    total += m(x).sum()\n", True),
        ("w = torch.ones(2, requires_grad=True)\nfor x in xs:\n    acc = acc + (w * x).sum()\n", True),
        ("w = torch.ones(2).requires_grad_()\nfor x in xs:\n    acc = acc + (w * x).sum()\n", True),
        ("w.requires_grad_(requires_grad=True)\nfor x in xs:\n    acc += w * x\n", True),
        ("w = nn.Parameter(torch.ones(2))\nfor x in xs:\n    acc += w * x\n", True),
        ("loss . backward ()\n", True),
        # a definition named like a backward is not a call of one
        ("def max_pool2d_backward(grad):\n    return grad\n", False),
        # markers in whole-line comments are not code
        ("# loss.backward() here would fail\nx = 1\n", False),
        ("for x in xs:\n    # w = torch.ones(2, requires_grad=True)\n    acc += x\n", False),
        # a runtime flag leaves tracking unknown, and unknown is never reported
        ("t = make(requires_grad=requires_grad)\nfor x in xs:\n    acc += t * x\n", False),
        ("t.requires_grad_(flag)\nfor x in xs:\n    acc += t * x\n", False),
        # numpydoc's "Parameters" heading and torch.fx's GraphModule track nothing
        ('def f(gm: GraphModule, xs):\n    """Parameters\n    ----------\n    """\n    for x in xs:\n        acc += x\n',
         False),
    ],
)
def test_precheck_markers(code, expected):
    assert may_hold_hazard(code, Settings()) is expected


def test_configured_functions_defeat_the_skip():
    code = "for batch in data:\n    trainer.apply_gradients(loss)\n"
    assert not may_hold_hazard(code, Settings())
    assert may_hold_hazard(code, Settings(backward_functions=("trainer.apply_gradients",)))


def test_skipping_loses_nothing_on_the_fixtures():
    lost = [hit for path in FIXTURES for hit in [_hazards_when_not_prechecked(str(path))] if hit[1]]
    assert lost == []


def test_skipping_loses_nothing_on_the_torch_package():
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    files = sorted(str(p) for p in Path(spec.origin).parent.rglob("*.py"))
    assert len(files) > 1000
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        lost = [hit for hit in pool.map(_hazards_when_not_prechecked, files, chunksize=16) if hit[1]]
    assert lost == []


def test_a_file_whose_import_holds_the_backward_is_not_skipped(tmp_path):
    """`train(model, data)` of another file of the project runs the backward:
    the calling file has no marker of its own, but is analysed."""
    (tmp_path / "trainer.py").write_text("def train(model, x):\n    model(x).sum().backward()\n")
    (tmp_path / "models.py").write_text("import torch.nn as nn\nclass Net(nn.Module):\n    fc = nn.Linear(2, 2)\n")
    code = "from trainer import train\ntrain(model, x)\n"
    main = str(tmp_path / "main.py")
    assert not may_hold_hazard(code, Settings())
    assert may_hold_hazard(code, Settings(), main)
    # a first-party model lends tracked values to a loop that accumulates here
    loop = "from models import Net\nnet = Net()\nfor x in xs:\n    total += net(x)\n"
    assert may_hold_hazard(loop, Settings(), main)
    assert not may_hold_hazard("from models import Net\nnet = Net()\n", Settings(), main)
    assert not may_hold_hazard("import numpy\nfor x in xs:\n    total += x\n", Settings(), main)


def test_a_file_passing_its_model_to_an_imported_evaluation_loop_is_not_skipped(tmp_path):
    """`evaluate(model, loader)` of another file loops and sums the loss (no
    backward, no marker there): the file that builds the model and passes it
    is analysed, since only its call makes the loss tracked."""
    (tmp_path / "evaluation.py").write_text(
        "def evaluate(model, batches):\n    total = 0\n    for x in batches:\n        total += model(x).sum()\n"
        "    print(total)\n")
    main = str(tmp_path / "main.py")
    script = "import torch.nn as nn\nfrom evaluation import evaluate\nevaluate(nn.Linear(2, 1), xs)\n"
    assert may_hold_hazard(script, Settings(), main)
    assert not may_hold_hazard(script, Settings())
    # nothing tracked by construction here: skipped
    assert not may_hold_hazard("from evaluation import evaluate\nevaluate(model, xs)\n", Settings(), main)


PROJECT_FILES = sorted((Path(__file__).parents[1] / "fixtures" / "projects").rglob("*.py"))


def test_skipping_loses_nothing_on_the_fixture_projects():
    """Each file of a fixture project, judged with its path (what it imports
    counts): one the pre-check skips has no diagnostic when analysed anyway
    (with the other files of its project read from disk)."""
    lost = [hit for path in PROJECT_FILES for hit in [_hazards_when_not_prechecked(str(path))] if hit[1]]
    assert len(PROJECT_FILES) > 20 and lost == []


def test_re_exports_are_followed_transitively(tmp_path):
    """`from zoo import Net`, where `zoo/__init__.py` re-exports `.registry`,
    which re-exports `.convnets` (or names it as a submodule): the model's
    parametric layer is two re-exports away from the loop that accumulates."""
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    (zoo / "convnets.py").write_text("import torch.nn as nn\nclass Net(nn.Module):\n    fc = nn.Linear(2, 2)\n")
    (zoo / "__init__.py").write_text("from .registry import *\n")
    loop = "from zoo import Net\nnet = Net()\nfor x in xs:\n    total += net(x)\n"
    main = str(tmp_path / "main.py")
    settings = Settings(project_root=str(tmp_path))  # where `zoo.convnets` resolves from inside the package
    for registry in ("from .convnets import *\n", "from .convnets import Net\n", "from . import convnets\n",
                     "from zoo.convnets import Net as Net\n"):
        (zoo / "registry.py").write_text(registry)
        assert may_hold_hazard(loop, settings, main), registry
    # a re-export chain that ends in no model: still skipped
    (zoo / "registry.py").write_text("from .helpers import *\n")
    (zoo / "helpers.py").write_text("from .registry import *\nSCALE = 2\n")  # a cycle, too
    assert not may_hold_hazard(loop, settings, main)
    # a plain `import` of a module with no marker re-exports nothing that matters
    (tmp_path / "constants.py").write_text("SCALE = 2\n")
    (zoo / "registry.py").write_text("import os\nimport constants\n")
    assert not may_hold_hazard(loop, settings, main)
    # but one that binds a package reaches every submodule by attribute (`zoo.convnets.Net`): kept
    (zoo / "registry.py").write_text("import zoo.convnets\n")
    assert may_hold_hazard(loop, settings, main)


def test_imports_are_looked_up_only_as_far_as_the_verdict_needs(tmp_path):
    """The pre-check follows the last import first and stops at the first
    marker: a kept file notes (`reads`) only the lookups its verdict rests
    on, so a module appearing for an import it never looked at does not
    make the cache lint it again; a skipped file notes every import's."""
    from tapelint.analysis import reads

    (tmp_path / "trainer.py").write_text("def train(model, x):\n    model(x).sum().backward()\n")
    (tmp_path / "helpers.py").write_text("SCALE = 2\n")
    main = str(tmp_path / "main.py")
    settings = Settings(project_root=str(tmp_path))
    with reads.recording() as kept:
        assert may_hold_hazard("from helpers import SCALE\nfrom trainer import train\ntrain(m, x)\n", settings, main)
    assert str(tmp_path / "trainer.py") in kept and str(tmp_path / "helpers.py") not in kept
    with reads.recording() as skipped:
        assert not may_hold_hazard("from helpers import SCALE\nfrom missing import train\ntrain(m, x)\n", settings,
                                   main)
    assert str(tmp_path / "helpers.py") in skipped and skipped[str(tmp_path / "missing.py")] == reads.MISSING


def test_one_lint_asks_the_disk_each_question_once(tmp_path, monkeypatch):
    """The pre-check, the thin analysis and the analysis of one file resolve
    the same imports: one lint stats each path once (`reads.one_view`),
    and notes each as a fact its result depends on."""
    from tapelint.analysis import reads

    (tmp_path / "trainer.py").write_text("def train(model, x):\n    model(x).sum().backward()\n")
    (tmp_path / "main.py").write_text("import helpers\nfrom trainer import train\nfor x in xs:\n    train(m, x)\n")
    asked: list[str] = []
    real = reads._stat_state
    monkeypatch.setattr(reads, "_stat_state", lambda path: asked.append(path) or real(path))
    with reads.recording() as facts:
        lint_source((tmp_path / "main.py").read_text(), str(tmp_path / "main.py"), Settings(project_root=str(tmp_path)))
    looked = [path for path in asked if path.startswith(str(tmp_path))]
    assert str(tmp_path / "helpers.py") in looked and len(looked) == len(set(looked))
    assert set(looked) <= set(facts)


@pytest.mark.parametrize(
    "init,script",
    [
        # a parenthesised import list over lines, with a comment: each name a submodule
        ("from . import (\n    train,  # the loop\n)\n", "import torch\nimport pkg\npkg.train.run(m, xs, opt)\n"),
        # several modules on one plain `import`
        ("", "import os, pkg.train\npkg.train.run(m, xs, opt)\n"),
        ("", "import os, pkg.train as t\nt.run(m, xs, opt)\n"),
        # a package bound by a plain `import`, its submodule reached by attribute
        ("", "import torch\nimport pkg\npkg.train.run(m, xs, opt)\n"),
    ],
)
def test_every_spelling_of_an_import_is_followed(tmp_path, init, script):
    """The training loop is in `pkg/train.py`; the script that calls it with
    its model has no marker of its own. However its import is spelled, the
    pre-check follows it there (a parenthesised list read as one line once
    skipped such a script, and lost its TL001)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(init)
    (tmp_path / "pkg" / "train.py").write_text(
        "def run(model, xs, opt):\n    out = model(xs[0])\n    for x in xs:\n        out.sum().backward()\n"
        "        opt.step()\n")
    assert may_hold_hazard(script, Settings(project_root=str(tmp_path)), str(tmp_path / "main.py"))


def test_a_plain_import_in_an_imported_module_is_followed(tmp_path):
    """`fit` of runner.py calls `loops.train` through `import loops`; the
    script calling `fit` has no marker of its own and was once skipped (its
    TL001 lost: `fixtures/projects/tl001_train_loop_behind_plain_import`)."""
    (tmp_path / "loops.py").write_text(
        "def train(model, x, opt):\n    out = model(x)\n    for _ in range(3):\n        out.sum().backward()\n")
    (tmp_path / "runner.py").write_text("import loops\n\n\ndef fit(model, x, opt):\n    loops.train(model, x, opt)\n")
    script = "from runner import fit\nfit(m, x, opt)\n"
    assert may_hold_hazard(script, Settings(project_root=str(tmp_path)), str(tmp_path / "main.py"))
    (tmp_path / "loops.py").write_text("def train(model, x, opt):\n    return model(x)\n")
    assert not may_hold_hazard(script, Settings(project_root=str(tmp_path)), str(tmp_path / "main.py"))


def test_a_subpackage_bound_by_a_from_import_keeps_the_file(tmp_path):
    """`from pkg import sub` binds the package `sub`: `sub.train.run()` may
    reach any of its submodules, so the file is kept."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    script = "from pkg import sub\nsub.train.run(m, xs, opt)\n"
    assert may_hold_hazard(script, Settings(project_root=str(tmp_path)), str(tmp_path / "main.py"))


def test_more_imported_modules_than_the_bound_keep_the_file(tmp_path):
    """A chain of imports longer than `MAX_FOLLOWED`: the pre-check stops
    following and keeps the file rather than guess that the rest is clean."""
    from tapelint.precheck import MAX_FOLLOWED

    for i in range(MAX_FOLLOWED + 1):
        (tmp_path / f"m{i}.py").write_text(f"from m{i + 1} import f\n")
    settings, main = Settings(project_root=str(tmp_path)), str(tmp_path / "main.py")
    assert may_hold_hazard("from m0 import f\nf()\n", settings, main)
    assert not may_hold_hazard(f"from m{MAX_FOLLOWED - 40} import f\nf()\n", settings, main)
