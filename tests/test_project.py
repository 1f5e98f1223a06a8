"""Project-wide analysis: first-party imports resolve to the files of the
project (`analysis/project.py`), their classes and functions are interpreted
where another file uses them, and what is found through them is reported in
the linted file with the other file's lines as related locations."""

from __future__ import annotations

import io
import os
import textwrap
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest

from tapelint.analysis.project import ImportTarget, ModuleCache, Project, summarise
from tapelint.config import Resolver
from tapelint.lint import lint_source
from tapelint.settings import Settings
from tapelint.stdin import lint_stdin

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))
"""

# The model's output, computed once before the loop, backwarded on every step: TL001.
HOISTED = """\
import torch
{imports}
net = {make}
feats = net(torch.randn(2, 4))
for step in range(3):
    loss = (feats * 2).sum()
    loss.backward()
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def lint(path: Path, settings: Settings = Settings()) -> list[tuple[str, int]]:
    result = lint_source(path.read_text(encoding="utf-8"), str(path), settings)
    assert not result.errors, result.errors
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


@pytest.mark.parametrize(
    "files,imports,make",
    [
        ({"models.py": MODEL}, "import models", "models.Net()"),
        ({"models.py": MODEL}, "from models import Net", "Net()"),
        ({"models.py": MODEL}, "from models import *", "Net()"),
        ({"models.py": MODEL}, "import models as m", "m.Net()"),
        ({"pkg/__init__.py": "", "pkg/sub.py": MODEL}, "from pkg.sub import Net", "Net()"),
        ({"pkg/__init__.py": "", "pkg/sub.py": MODEL}, "import pkg.sub as s", "s.Net()"),
        ({"pkg/__init__.py": "", "pkg/sub.py": MODEL}, "import pkg.sub", "pkg.sub.Net()"),
        ({"pkg/__init__.py": "", "pkg/sub.py": MODEL}, "from pkg import sub", "sub.Net()"),
        # re-exported by the package's __init__, relatively
        ({"pkg/__init__.py": "from .nets import Net\n", "pkg/nets.py": MODEL}, "from pkg import Net", "Net()"),
        ({"pkg/__init__.py": "from .nets import *\n", "pkg/nets.py": MODEL}, "import pkg", "pkg.Net()"),
        # a module-level alias
        ({"models.py": MODEL + "Model = Net\n"}, "from models import Model", "Model()"),
        # the package's __init__ imports its own subpackage, which re-exports
        # the class (learn2learn: `import learn2learn as l2l`, `l2l.algorithms.MAML`)
        ({"pkg/__init__.py": "from . import models\n", "pkg/models/__init__.py": "from .nets import Net\n",
          "pkg/models/nets.py": MODEL}, "import pkg as p", "p.models.Net()"),
        ({"pkg/__init__.py": "from . import vision\n", "pkg/vision/__init__.py": "from . import models\n",
          "pkg/vision/models/__init__.py": "from .nets import *\n", "pkg/vision/models/nets.py": MODEL},
         "import pkg", "pkg.vision.models.Net()"),
    ],
    ids=["import", "from", "star", "as", "from-pkg", "pkg-as", "pkg-dotted", "from-pkg-module", "reexport",
         "reexport-star", "alias", "own-subpackage", "own-subpackage-twice"],
)
def test_imported_model_is_analysed_where_it_is_used(tmp_path, files, imports, make):
    write(tmp_path, {**files, "train.py": HOISTED.format(imports=imports, make=make)})
    assert lint(tmp_path / "train.py") == [("TL001", 4)]


def test_unresolved_import_is_unknown_as_before(tmp_path):
    write(tmp_path, {"train.py": HOISTED.format(imports="from models import Net", make="Net()")})
    assert lint(tmp_path / "train.py") == []


def test_relative_import_inside_a_package(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/nets.py": MODEL,
        "pkg/train.py": HOISTED.format(imports="from .nets import Net", make="Net()"),
    })
    assert lint(tmp_path / "pkg" / "train.py") == [("TL001", 4)]


def test_parent_relative_import(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/models/__init__.py": "",
        "pkg/models/nets.py": MODEL,
        "pkg/scripts/__init__.py": "",
        "pkg/scripts/train.py": HOISTED.format(imports="from ..models.nets import Net", make="Net()"),
    })
    assert lint(tmp_path / "pkg" / "scripts" / "train.py") == [("TL001", 4)]


def test_import_cycle_ends(tmp_path):
    """a imports b imports a (and each re-exports the other): resolution
    terminates and a name neither defines stays unknown."""
    write(tmp_path, {
        "a.py": "from b import *\nfrom b import Missing\n",
        "b.py": "from a import *\nfrom a import Missing\n",
        "train.py": HOISTED.format(imports="from a import Missing", make="Missing()"),
    })
    assert lint(tmp_path / "train.py") == []


def test_module_imported_back_sees_its_definitions(tmp_path):
    """train.py imports models, which imports train back: both resolve."""
    write(tmp_path, {
        "models.py": "import train\n" + MODEL,
        "train.py": HOISTED.format(imports="from models import Net", make="Net()"),
    })
    assert lint(tmp_path / "train.py") == [("TL001", 4)]


def test_subclass_of_a_module_of_another_file(tmp_path):
    write(tmp_path, {
        "base.py": MODEL,
        "models.py": "from base import Net\n\nclass Bigger(Net):\n    pass\n",
        "train.py": HOISTED.format(imports="from models import Bigger", make="Bigger()"),
    })
    assert lint(tmp_path / "train.py") == [("TL001", 4)]


def test_function_of_another_file_runs_with_real_arguments(tmp_path):
    """`step(loss)` of another file backwards its argument: the hoisted loss
    is walked twice (TL004 at the backward, placed at the call of this file).
    (The textual pre-check would skip this file, which has no backward of its
    own; the analysis is what is tested here.)"""
    write(tmp_path, {
        "helpers.py": "def step(loss):\n    loss.backward()\n",
        "train.py": """\
            import torch
            from helpers import step
            w = torch.tensor([1.0], requires_grad=True)
            loss = (w.exp() * 2).sum()
            for i in range(2):
                step(loss)
            """,
    })
    result = lint_source((tmp_path / "train.py").read_text(), str(tmp_path / "train.py"), Settings(), precheck=False)
    assert [(d.code, d.range.start.line) for d in result.diagnostics] == [("TL004", 6)]
    related = {(r.role.value, os.path.basename(r.path), r.range.start.line) for r in result.diagnostics[0].related}
    assert ("fails-at", "helpers.py", 2) in related
    assert all(r.path == str(tmp_path / "train.py") for r in result.diagnostics[0].related
               if os.path.basename(r.path) == "train.py")


def test_other_files_lines_are_related_locations_with_their_own_path(tmp_path):
    write(tmp_path, {"models.py": MODEL, "train.py": HOISTED.format(imports="import models", make="models.Net()")})
    result = lint_source((tmp_path / "train.py").read_text(), str(tmp_path / "train.py"), Settings())
    (diagnostic,) = result.diagnostics
    assert diagnostic.path == str(tmp_path / "train.py") and diagnostic.range.start.line == 4
    origin = [r for r in diagnostic.related if r.path != diagnostic.path]
    assert [(r.role.value, r.path, r.range.start.line) for r in origin] == [
        ("definition", str(tmp_path / "models.py"), 11)]
    assert "`Net.forward`" in origin[0].message and "models.py line 11" in origin[0].message


def test_relative_linted_path_gives_relative_related_paths(tmp_path, monkeypatch):
    write(tmp_path, {"models.py": MODEL, "train.py": HOISTED.format(imports="import models", make="models.Net()")})
    monkeypatch.chdir(tmp_path)
    result = lint_source(Path("train.py").read_text(), "train.py", Settings())
    assert {r.path for r in result.diagnostics[0].related} == {"train.py", "models.py"}


def test_src_setting_is_a_root(tmp_path):
    write(tmp_path, {
        "lib/mylib/__init__.py": "",
        "lib/mylib/nets.py": MODEL,
        "scripts/train.py": HOISTED.format(imports="from mylib.nets import Net", make="Net()"),
        "pyproject.toml": '[tool.tapelint]\nsrc = ["lib"]\n',
    })
    train = tmp_path / "scripts" / "train.py"
    assert lint(train) == []  # not found from the file's own directory
    settings = Resolver().settings_for(str(train))
    assert settings.src == (str(tmp_path / "lib"),) and settings.project_root == str(tmp_path)
    assert lint(train, settings) == [("TL001", 4)]


def test_project_root_is_a_root(tmp_path):
    write(tmp_path, {
        "mylib/__init__.py": "",
        "mylib/nets.py": MODEL,
        "scripts/train.py": HOISTED.format(imports="from mylib.nets import Net", make="Net()"),
    })
    assert lint(tmp_path / "scripts" / "train.py", Settings(project_root=str(tmp_path))) == [("TL001", 4)]


def test_the_src_layout_is_a_root_without_configuration(tmp_path):
    """Like ruff's default `src = [".", "src"]`: `src/` under the project root
    is searched when no `src` is configured, and not when one is."""
    write(tmp_path, {
        "src/mylib/__init__.py": "",
        "src/mylib/nets.py": MODEL,
        "scripts/train.py": HOISTED.format(imports="from mylib.nets import Net", make="Net()"),
    })
    train = tmp_path / "scripts" / "train.py"
    assert lint(train, Settings(project_root=str(tmp_path))) == [("TL001", 4)]
    assert lint(train, Settings(project_root=str(tmp_path), src=(str(tmp_path / "lib"),))) == []


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", "setup.cfg", ".git/HEAD"])
def test_without_configuration_the_project_marker_is_the_root_from_any_directory(tmp_path, monkeypatch, marker):
    """No `[tool.tapelint]`: the nearest folder above the file with a
    project marker is the root, so `tapelint check /path/to/project` finds
    the src layout's modules whatever the working directory."""
    project = tmp_path / "project"
    write(project, {
        marker: "",
        "src/mylib/__init__.py": "",
        "src/mylib/nets.py": MODEL,
        "scripts/train.py": HOISTED.format(imports="from mylib.nets import Net", make="Net()"),
    })
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert lint(project / "scripts" / "train.py") == [("TL001", 4)]


def test_without_a_marker_the_working_directory_is_the_root(tmp_path, monkeypatch):
    write(tmp_path, {
        "src/mylib/__init__.py": "",
        "src/mylib/nets.py": MODEL,
        "scripts/train.py": HOISTED.format(imports="from mylib.nets import Net", make="Net()"),
    })
    train = tmp_path / "scripts" / "train.py"
    monkeypatch.chdir(tmp_path / "scripts")
    assert lint(train) == []  # from scripts/, the root's src/ would be scripts/src
    monkeypatch.chdir(tmp_path)
    assert lint(train) == [("TL001", 4)]


def test_torch_is_never_first_party(tmp_path):
    """A directory called `torch` under a root does not replace the vocabulary."""
    write(tmp_path, {"torch/__init__.py": "def exp(x):\n    return x\n", "models.py": MODEL,
                     "train.py": HOISTED.format(imports="import models", make="models.Net()")})
    assert lint(tmp_path / "train.py") == [("TL001", 4)]


def test_stdin_uses_the_other_files_from_disk(tmp_path):
    write(tmp_path, {"models.py": MODEL})
    source = HOISTED.format(imports="import models", make="models.Net()")
    run = lint_stdin(io.BytesIO(source.encode()), str(tmp_path / "train.py"), Settings())
    assert [(d.code, d.range.start.line) for d in run.run.results[0].diagnostics] == [("TL001", 4)]


def test_summary_is_plain_data(tmp_path):
    write(tmp_path, {"models.py": MODEL + "Model = Net\n__all__ = ['Net']\n", "other.py": "",
                     "train.py": "from models import Net as N\nimport other\nfrom other import *\nimport numpy\n"})
    summary = summarise(cst.parse_module((tmp_path / "train.py").read_text()), str(tmp_path / "train.py"),
                        (str(tmp_path),))
    assert dict(summary.imports) == {"N": ImportTarget(str(tmp_path / "models.py"), "Net"),
                                     "other": ImportTarget(str(tmp_path / "other.py"))}
    assert summary.star_imports == (str(tmp_path / "other.py"),)
    models = summarise(cst.parse_module((tmp_path / "models.py").read_text()), str(tmp_path / "models.py"), ())
    assert (models.classes, models.aliases, models.exported) == (("Net",), (("Model", "Net"),), ("Net",))
    import pickle

    assert pickle.loads(pickle.dumps(models)) == models


def test_each_module_is_parsed_once_while_unchanged(tmp_path):
    write(tmp_path, {"models.py": MODEL})
    cache = ModuleCache()
    path = str(tmp_path / "models.py")
    first = cache.module(path)
    assert first is not None and cache.module(path) is first
    os.utime(path, ns=(1, 1))
    assert cache.module(path) is first  # touched, same text: no second parse
    with open(path, "a") as handle:
        handle.write("\nX = 1\n")
    assert cache.module(path) is not first


def test_a_linted_file_and_its_importers_share_one_parse(tmp_path):
    write(tmp_path, {"models.py": MODEL})
    cache = ModuleCache()
    path = str(tmp_path / "models.py")
    linted = cache.tree(path, MODEL)
    assert cache.module(path) is linted  # an importer after the lint
    assert cache.tree(path, MODEL) is linted  # linted again, unchanged
    assert cache.tree(path, MODEL + "\nX = 1\n") is not linted  # an editor's unsaved text


def test_cache_is_bounded(tmp_path):
    write(tmp_path, {f"m{i}.py": MODEL for i in range(5)})
    cache = ModuleCache(budget=len(MODEL) * 2)
    for i in range(5):
        cache.module(str(tmp_path / f"m{i}.py"))
    assert len(cache.entries) == 2 and cache.chars <= len(MODEL) * 2


def test_project_lookup_guards_cycles(tmp_path):
    write(tmp_path, {"a.py": "from b import X\n", "b.py": "from a import X\n"})
    project = Project((), str(tmp_path), lambda path, module, summary: None)  # type: ignore[arg-type,return-value]
    summary = project.summary_of(str(tmp_path / "a.py"), cst.parse_module("from b import X\n"))
    assert project.lookup(summary, ["X"]) is None




def test_modules_loaded_per_analysis_are_bounded(tmp_path):
    """Past MAX_MODULES_PER_ANALYSIS other modules, a name is unknown (as
    without project analysis): the cost of a file importing its whole
    package stays bounded."""
    from tapelint.analysis.project import MAX_MODULES_PER_ANALYSIS

    count = MAX_MODULES_PER_ANALYSIS + 3
    files = {f"m{i}.py": MODEL for i in range(count)}
    uses = "\n".join(f"import m{i}\nn{i} = m{i}.Net()" for i in range(count))
    write(tmp_path, {**files, "first.py": HOISTED.format(imports=uses, make="m0.Net()"),
                     "last.py": HOISTED.format(imports=uses, make=f"m{count - 1}.Net()")})
    first, last = lint(tmp_path / "first.py"), lint(tmp_path / "last.py")
    assert [code for code, _ in first] == ["TL001"] and last == []


def test_one_analysis_looks_at_each_path_once(tmp_path, monkeypatch):
    """Lookups through a package ask the same folders the same questions;
    one analysis stats each path once, and still records each as a fact the
    result depends on (the next analysis looks again: the test below)."""
    from tapelint.analysis import reads

    write(tmp_path, {"pkg/__init__.py": "from .nets import *\n", "pkg/nets.py": MODEL})
    uses = "\n".join(f"n{i} = pkg.Net()" for i in range(5))
    write(tmp_path, {"train.py": HOISTED.format(imports=f"import pkg\n{uses}", make="pkg.Net()")})
    asked: list[str] = []
    real = reads._stat_state
    monkeypatch.setattr(reads, "_stat_state", lambda path: asked.append(path) or real(path))
    with reads.recording() as facts:
        assert lint(tmp_path / "train.py") == [("TL001", 9)]
    looked = [path for path in asked if path.startswith(str(tmp_path))]
    assert looked and len(looked) == len(set(looked))
    assert set(looked) <= set(facts)


def test_one_view_answers_as_the_disk_was_when_first_asked(tmp_path):
    from tapelint.analysis import reads

    path = tmp_path / "m.py"
    path.write_text("")
    with reads.one_view():
        assert reads.path_state(str(path)) == reads.FILE
        path.unlink()
        assert reads.path_state(str(path)) == reads.FILE
    assert reads.path_state(str(path)) == reads.MISSING


def test_a_run_workers_lints_share_one_view(tmp_path, monkeypatch):
    """A worker of one run looks a path up once for all its files; each lint
    still notes what it relied on."""
    from tapelint.analysis import reads

    monkeypatch.setattr(reads, "_run_states", None)
    path = tmp_path / "m.py"
    path.write_text("")
    with reads.one_view():
        assert reads.path_state(str(path)) == reads.FILE
    path.unlink()
    with reads.one_view():
        assert reads.path_state(str(path)) == reads.MISSING  # not a run's worker: each lint looks again
    path.write_text("")
    reads.one_view_per_process()
    with reads.one_view():
        assert reads.path_state(str(path)) == reads.FILE
    path.unlink()
    with reads.recording() as facts, reads.one_view():
        assert reads.path_state(str(path)) == reads.FILE  # the disk as the run first found it
    assert facts == {str(path): reads.FILE}


def test_one_view_is_its_threads_own(tmp_path):
    """An analysis on one thread (a file still running past its budget) does
    not answer for another's."""
    import threading

    from tapelint.analysis import reads

    path = tmp_path / "m.py"
    path.write_text("")
    inside, leave = threading.Event(), threading.Event()

    def analysing() -> None:
        with reads.one_view():
            reads.path_state(str(path))
            inside.set()
            leave.wait(5)

    other = threading.Thread(target=analysing)
    other.start()
    try:
        assert inside.wait(5)
        path.unlink()
        assert reads.path_state(str(path)) == reads.MISSING
    finally:
        leave.set()
        other.join()


def test_a_cached_module_builds_its_import_map_once(tmp_path):
    """Every importer's analysis builds the imported module's program again;
    its import map (a walk of every statement) comes from the parse cache."""
    write(tmp_path, {"models.py": MODEL})
    cache = ModuleCache()
    path = str(tmp_path / "models.py")
    module = cache.module(path)
    assert module is not None
    first = cache.import_map(path, module)
    assert cache.import_map(path, module) is first
    assert first.resolve("nn.Linear") == "torch.nn.Linear"
    assert cache.import_map(path, cst.parse_module(MODEL)) is not first  # another tree of the text
    (tmp_path / "models.py").write_text(MODEL.replace("import torch.nn as nn", "import torch.nn as tnn"))
    changed = cache.module(path)
    assert changed is not None and cache.import_map(path, changed).resolve("tnn.Linear") == "torch.nn.Linear"


def test_one_index_of_the_linted_module_serves_placing_positions_and_fixes(tmp_path, monkeypatch):
    """Placing a hazard found through another module, positioning its nodes
    and building its fixes each walked the module's whole tree (and the fixes
    once more per finding placed with origins): now one walk of parent links
    serves them all."""
    from tapelint.analysis import children, names, syntax

    whole_walks: list[cst.CSTNode] = []

    def counted(node: cst.CSTNode) -> tuple:
        if type(node) is cst.Module:
            whole_walks.append(node)
        return children.children_of(node)

    for module in (names, syntax):
        monkeypatch.setattr(module, "children_of", counted)
    write(tmp_path, {"models.py": MODEL, "train.py": HOISTED.format(imports="import models", make="models.Net()")})
    result = lint_source((tmp_path / "train.py").read_text(), str(tmp_path / "train.py"), Settings())
    assert [d.code for d in result.diagnostics] == ["TL001"] and result.diagnostics[0].fixes
    # (the quick analysis before the whole lint walks a tree of its own)
    walked = Counter(id(module) for module in whole_walks if "models.Net()" in module.code)
    assert walked and set(walked.values()) == {1}
