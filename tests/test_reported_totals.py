"""The pre-check's second stage (`precheck.may_hold_hazard_in_tree`) and the
totals it reads from CPython's tree (`reported_totals`): it may skip a file
only when the analysis could find nothing there. Proven here against the
analysis itself: the names it reads as reported after a loop are those the
analysis's `_UseFinder` reads so, and every total the analysis records is one
it counts as accumulated, on every fixture."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from tapelint.analysis.accumulation import Accumulations, _base_name, _UseFinder
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.parsing import parse_module
from tapelint.analysis.reported_totals import reports_a_total, totals_of
from tapelint.analysis.syntax import walk_nodes
from tapelint.lint import lint_source
from tapelint.precheck import may_hold_hazard_in_tree
from tapelint.settings import Settings

ROOT = Path(__file__).parents[1] / "fixtures"
SOURCES = sorted(ROOT.glob("*.py")) + sorted((ROOT / "projects").rglob("*.py"))


def _reported(code: str) -> frozenset[str]:
    return totals_of(ast.parse(code)).reported_after_a_loop


@pytest.mark.parametrize(
    "code,reported",
    [
        ("for x in xs:\n    total += x\nprint(total)\n", True),
        ("for x in xs:\n    total += x\nprint(f'{total:.3f}')\n", True),
        ("for x in xs:\n    total += x\nlog.info('%s', total.item())\n", True),
        ("for x in xs:\n    total += x\ntotal /= len(xs)\nprint(total)\n", True),
        ("for x in xs:\n    total += x\ntotal = total / n\nwriter.add_scalar('loss', total, step)\n", True),
        ("for x in xs:\n    total += x\nprint(float(total / n))\n", True),
        ("while True:\n    total += x\nprint(total)\n", True),
        # computed with, or returned: the program goes on with the total
        ("for x in xs:\n    total += x\nreturn total\n", False),
        ("for x in xs:\n    total += x\nprint(total)\nloss = total * 2\n", False),
        ("for x in xs:\n    total += x\nprint(n / total)\n", False),
        # not after the loop: no report of a total
        ("print(total)\nfor x in xs:\n    total += x\n", False),
        ("for x in xs:\n    total += x\n", False),
    ],
)
def test_a_total_reported_after_its_loop(code, reported):
    tree = ast.parse(f"def f():\n{''.join('    ' + line + chr(10) for line in code.splitlines())}")
    totals = totals_of(tree)
    assert "total" in totals.accumulated
    assert ("total" in totals.reported_after_a_loop) is reported
    assert reports_a_total([totals]) is reported


def test_accumulating_statements_name_their_totals():
    code = ("t += x\nt2 = t2 + x\nself.hist[k].append(x)\nrunning.add_(x)\nd.setdefault(k, []).append(x)\n"
            "a = b = a + x\nq.appendleft(x)\nparts.update(x)\n")
    assert totals_of(ast.parse(code)).accumulated == {"t", "t2", "self.hist", "running", "d", "q", "parts"}


def test_a_total_accumulated_in_one_module_and_reported_in_another():
    """`self.add_value(loss)` adds into `self.sum` in its own module; the loop's
    module reports `self.sum` after the loop: the union decides."""
    meter = totals_of(ast.parse("class M:\n    def update(self, v):\n        self.sum += v\n"))
    loop = totals_of(ast.parse("def run(self):\n    for b in bs:\n        self.add_value(b)\n    print(self.sum)\n"))
    assert not reports_a_total([meter]) and not reports_a_total([loop])
    assert reports_a_total([meter, loop])


def _loops_and_blocks(module: cst.Module):
    for node in walk_nodes(module):
        body = getattr(node, "body", None)
        block = body if isinstance(node, cst.Module) else getattr(body, "body", None)
        if isinstance(block, (list, tuple)):
            for index, stmt in enumerate(block):
                if isinstance(stmt, (cst.For, cst.While)):
                    yield block, index


def _reported_by_the_analysis(module: cst.Module) -> set[str]:
    """Every name the analysis's `_UseFinder` reads as only reported after some loop."""
    reported: set[str] = set()
    for block, index in _loops_and_blocks(module):
        names = {dotted_name(n) for stmt in block[index + 1:] for n in walk_nodes(stmt)
                 if isinstance(n, (cst.Name, cst.Attribute))} - {None}
        for name in names:
            finder = _UseFinder(name)
            for stmt in block[index + 1:]:
                stmt.visit(finder)
            if finder.uses and all(finder.uses):
                reported.add(name)
    return reported


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tree_reads_reported_totals_as_the_analysis_does(path):
    source = path.read_text(encoding="utf-8")
    assert totals_of(ast.parse(source)).reported_after_a_loop == _reported_by_the_analysis(parse_module(source))


def test_every_total_the_analysis_records_is_counted(monkeypatch):
    """Linted whole, each fixture's (and each fixture project's) recorded
    accumulations name only totals the second stage counts."""
    recorded: list[tuple[str, str]] = []
    note = Accumulations.note

    def spy(self, loops, context, statement, target, *rest):
        recorded.append((current[0], _base_name(target) or ""))
        return note(self, loops, context, statement, target, *rest)

    monkeypatch.setattr(Accumulations, "note", spy)
    current = [""]
    counted: dict[str, set[str]] = {}  # a fixture, or a fixture project: what the second stage counts
    for path in SOURCES:
        inside = path.relative_to(ROOT).parts
        current[0] = str(ROOT.joinpath(*inside[:2]) if inside[0] == "projects" else path)
        counted.setdefault(current[0], set()).update(totals_of(ast.parse(path.read_text(encoding="utf-8"))).accumulated)
        lint_source(path.read_text(encoding="utf-8"), str(path), Settings(), precheck=False)
    missed = {(where, name) for where, name in recorded if name and name not in counted[where]}
    assert len(recorded) > 300 and missed == set()


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


EVALUATION = ("def evaluate(model, batches):\n    total = 0\n    for x in batches:\n        total += model(x).sum()\n"
              "    print(total)\n")
SCRIPT = "import torch.nn as nn\nfrom evaluation import evaluate\nevaluate(nn.Linear(2, 1), xs)\n"


def _kept(folder: Path, code: str) -> bool:
    settings = Settings(project_root=str(folder))
    return may_hold_hazard_in_tree(code, ast.parse(code), settings, str(folder / "main.py"))


def test_an_imported_evaluation_loop_that_reports_its_total_keeps_the_file(tmp_path):
    _write(tmp_path, {"evaluation.py": EVALUATION})
    assert _kept(tmp_path, SCRIPT)
    result = lint_source(SCRIPT, str(tmp_path / "main.py"), Settings(project_root=str(tmp_path)))
    assert [d.code for d in result.diagnostics] == ["TL003"]


def test_an_imported_loop_that_returns_its_total_skips_the_file(tmp_path):
    _write(tmp_path, {"evaluation.py": EVALUATION.replace("print(total)", "return total")})
    assert not _kept(tmp_path, SCRIPT)
    result = lint_source(SCRIPT, str(tmp_path / "main.py"), Settings(project_root=str(tmp_path)))
    assert result.skipped and not result.diagnostics
    assert not lint_source(SCRIPT, str(tmp_path / "main.py"), Settings(project_root=str(tmp_path)),
                           precheck=False).diagnostics


@pytest.mark.parametrize(
    "files",
    [
        # a backward two imports away: `evaluate` calls `train`
        {"evaluation.py": "from trainer import train\n\ndef evaluate(m, x):\n    return train(m, x)\n",
         "trainer.py": "def train(m, x):\n    m(x).sum().backward()\n"},
        # a package in reach as a value: its submodules are reached through attributes
        {"evaluation.py": "import zoo\n\ndef evaluate(m, x):\n    return run(zoo)\n", "zoo/__init__.py": ""},
        {"evaluation.py": "from . import zoo\n\ndef evaluate(m, x):\n    return run(zoo)\n", "zoo/__init__.py": ""},
        # a module CPython cannot parse (libcst may, for a newer Python): taken as the worst
        {"evaluation.py": "def f(:\n"},
        # a configured backward function
        {"evaluation.py": "def evaluate(loss):\n    apply_gradients(loss)\n"},
    ],
)
def test_what_keeps_a_file_without_a_reported_total(tmp_path, files):
    _write(tmp_path, files)
    code = "from evaluation import evaluate\nfor x in xs:\n    total += x\nreturn_value = total\n"
    settings = Settings(project_root=str(tmp_path), backward_functions=("apply_gradients",))
    assert may_hold_hazard_in_tree(code, ast.parse(code), settings, str(tmp_path / "main.py"))
    (tmp_path / "evaluation.py").write_text("def evaluate(m, x):\n    return m(x)\n")  # the control: skipped
    assert not may_hold_hazard_in_tree(code, ast.parse(code), settings, str(tmp_path / "main.py"))


def test_a_module_too_large_to_load_is_not_followed(tmp_path):
    """The analysis never loads a module past `MAX_MODULE_CHARS`: its backward changes nothing."""
    from tapelint.analysis.project import MAX_MODULE_CHARS

    padding = "# " + "x" * 70 + "\n"
    big = "def train(m, x):\n    m(x).sum().backward()\n" + padding * (MAX_MODULE_CHARS // len(padding) + 1)
    _write(tmp_path, {"trainer.py": big})
    code = "from trainer import train\nfor x in xs:\n    total += x\nresult = total\n"
    assert not _kept(tmp_path, code)


def test_a_skip_rests_on_every_module_it_read(tmp_path):
    """A skipped file's result is cached with what its verdict read: the
    content of each module its imported names reached, and each path looked up
    (so the cache lints it again when a module there starts reporting its
    total, or a missing one appears)."""
    from tapelint.analysis import reads

    _write(tmp_path, {"evaluation.py": EVALUATION.replace("print(total)", "return helpers.scale(total)")
                      + "import helpers\n", "helpers.py": "def scale(total):\n    return 2 * total\n"})
    code = "from evaluation import evaluate\nfrom missing import thing\nfor x in xs:\n    total += x\nresult = total\n"
    with reads.recording() as facts:
        assert not _kept(tmp_path, code)
    for name in ("evaluation.py", "helpers.py"):
        assert facts[str(tmp_path / name)] == reads.content_digest((tmp_path / name).read_bytes())
    assert facts[str(tmp_path / "missing.py")] == reads.MISSING
    (tmp_path / "helpers.py").write_text("def scale(total):\n    for t in ts:\n        total += t\n    print(total)\n")
    assert _kept(tmp_path, code)
