"""What a finding says and where (docs/rules.md, "Where a finding points"):
it names the value and the statement in the scope the user reads, a
callee's lines are related locations, and the reason it gives is the data
flow the analysis found — never "computed once" for something computed on
every iteration."""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from fixture_spec import FIXTURES_DIR, fixture_paths
from tapelint.diagnostics import Diagnostic, Role, Semantics
from tapelint.lint import lint_source
from tapelint.runner import lint_files
from tapelint.settings import Settings

STRICT = Settings(semantics=Semantics.STRICT)


def diagnostics(name: str, code: str) -> list[Diagnostic]:
    path = FIXTURES_DIR / name
    return [d for d in lint_source(path.read_text(encoding="utf-8"), str(path), STRICT).diagnostics if d.code == code]


def project(name: str, code: str) -> list[Diagnostic]:
    files = sorted(str(p) for p in (FIXTURES_DIR / "projects" / name).rglob("*.py"))
    run = lint_files(files, STRICT, jobs=1)
    return [d for r in run.results for d in r.diagnostics if d.code == code]


def _loop_spans(path: Path) -> dict[int, tuple[int, int]]:
    """First line -> (first, last) line of every `for`/`while` of the file."""
    wrapper = MetadataWrapper(cst.parse_module(path.read_text(encoding="utf-8")))
    positions = wrapper.resolve(PositionProvider)
    return {p.start.line: (p.start.line, p.end.line) for node, p in positions.items()
            if isinstance(node, (cst.For, cst.While))}


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: p.stem)
def test_computed_once_outside_a_loop_is_outside_it(path: Path) -> None:
    """Every "computed once at line N, outside the loop at line L" names a
    definition that really is outside that loop."""
    said = re.compile(r"computed once at line (\d+), outside the loop at line (\d+)")
    for d in lint_source(path.read_text(encoding="utf-8"), str(path), STRICT).diagnostics:
        found = said.search(d.message)
        if found:
            defined, loop = int(found.group(1)), int(found.group(2))
            first, last = _loop_spans(path)[loop]
            assert not first <= defined <= last, d.message


def test_an_element_kept_from_the_previous_episode_is_not_computed_once() -> None:
    [d] = diagnostics("tl001_log_probs_kept_from_previous_episode.py", "TL001")
    assert "computed once" not in d.message
    assert d.message.startswith("`log_prob` (line 33) is computed on every iteration of the loop at line 49, but an "
                                "element kept in `self.saved_log_probs` (created at line 17) from the previous "
                                "iteration is walked again by the backward at line 44")


def test_an_appended_expression_is_named_as_written() -> None:
    """The element is named by its source where it is created, not by the
    comprehension variable (`lp`) that later reads it."""
    path = Path(__file__).parent / "engine" / "programs" / "reinforce_stale_log_probs.py"
    [d] = lint_source(path.read_text(encoding="utf-8"), str(path), STRICT).diagnostics
    assert d.message.startswith("`m.log_prob(action)` (line 17) is computed on every iteration of the loop at line 11")
    assert "kept in `saved_log_probs` (created at line 9)" in d.message


def test_a_value_hoisted_before_the_loop_is_computed_once() -> None:
    [d] = diagnostics("tl001_hoisted_features.py", "TL001")
    assert d.message.startswith("`feats` is computed once at line 10, outside the loop at line 12;")


def test_a_cache_filled_in_an_earlier_step_says_so() -> None:
    [d] = diagnostics("tl001_lazy_cache_in_train_step.py", "TL001")
    # The object's method runs in the module's loop (the trainer is a project object), so that loop is named.
    assert "computed at line 22 in an earlier iteration of the loop at line 32 and kept, not recomputed" in d.message
    assert "outside" not in d.message


def test_a_loop_in_another_file_is_not_placed_at_one_line_of_this_one() -> None:
    [d] = project("tl001_train_function_third_file", "TL001")
    assert "outside the loop that `train(model, data, target, ...)` (line 16) runs in another file" in d.message
    assert "outside the loop at line 16" not in d.message


def test_a_step_and_backward_in_a_helper_method_are_named_at_its_calls() -> None:
    [d] = diagnostics("tl007_step_inside_helper_method.py", "TL007")
    assert d.range.start.line == 28  # `self._update(self.opt_g, g_loss)`, in train_step
    assert "that `self._update(self.opt_d, d_loss, ...)` at line 26 (through its `opt.step()`)" in d.message
    assert "the backward this call runs (`loss.backward(retain_graph=retain)`, line 19)" in d.message
    related = [(r.role, r.range.start.line, r.message) for r in d.related]
    assert (Role.STEP, 20, "`opt.step()` inside `Trainer._update`, line 20") in related
    fails = [r for r in d.related if r.role is Role.FAILS_AT]
    assert fails[0].range.start.line == 19  # where PyTorch raises: what `tapelint confirm` checks


def test_a_step_in_another_file_is_related_in_that_file() -> None:
    [d] = project("tl007_step_in_utils_file", "TL007")
    assert d.path.endswith("train.py") and d.range.start.line == 23
    assert "that `update(optimizer_D, ...)` at line 21 changes in place" in d.message
    other = sorted((r.role.value, Path(r.path).name, r.range.start.line) for r in d.related if r.path != d.path)
    # `retain=True` reaches the helper's `retain_graph=retain` as a fact: its first walk kept the graph
    assert other == [("fails-at", "utils.py", 4), ("first-backward", "utils.py", 4), ("step", "utils.py", 5)]


def test_a_hazard_wholly_in_a_trainer_method_is_reported_once_in_its_file() -> None:
    """One hazard, one finding across files: the trainer method's own file
    reports it; the loop file that calls the method adds no copy at its call."""
    [d] = project("tl002_trainer_method_called_from_loop_file", "TL002")
    assert Path(d.path).name == "agent.py" and d.range.start.line == 22
    assert d.message.startswith("`estimates` (line 16) is shared by the backward at line 20 and the one at line 22")


def test_a_hazard_only_the_caller_sees_is_kept_at_its_call(tmp_path: Path) -> None:
    """The callee's own analysis does not know its `model` parameter is a
    module, so only the call that passes one finds the reuse: that finding
    stays, with the callee's lines as related locations."""
    (tmp_path / "utils.py").write_text(
        "def fit(model, x):\n    out = model(x)\n    out.sum().backward()\n    out.mean().backward()\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport torch.nn as nn\n\nfrom utils import fit\n\nfit(nn.Linear(3, 1), torch.randn(2, 3))\n")
    run = lint_files(sorted(str(p) for p in tmp_path.glob("*.py")), STRICT, jobs=1)
    [d] = [d for r in run.results for d in r.diagnostics]
    assert (Path(d.path).name, d.code, d.range.start.line) == ("train.py", "TL002", 6)
    assert {(r.role, Path(r.path).name, r.range.start.line) for r in d.related} >= {
        (Role.FIRST_BACKWARD, "utils.py", 3), (Role.FAILS_AT, "utils.py", 4)}


def test_a_value_backwarded_in_either_arm_is_one_finding() -> None:
    """Hoisted or carried, a value walked by the backward of one arm and then,
    on a later iteration, by the other arm's is one hazard: both walks are
    its `fails-at` locations."""
    for name, code in (("tl005_carried_state_backwarded_in_either_arm.py", "TL005"),):
        path = FIXTURES_DIR / name
        found = lint_source(path.read_text(encoding="utf-8"), str(path), STRICT).diagnostics
        [d] = found
        assert d.code == code and d.fails_under == (Semantics.TORCH, Semantics.STRICT)
        assert sorted(r.range.start.line for r in d.related if r.role is Role.FAILS_AT) == (
            [16, 18] if code == "TL001" else [18, 20])


def test_messages_quote_the_statement_their_fix_writes() -> None:
    """TL003 on a tensor-or-number (`loss if c else 0.0`) says `float(...)`,
    as its edit does; TL005 on an LSTM's `(h, c)` says the tuple detach."""
    path = FIXTURES_DIR / "tl003_loss_or_zero_accumulated.py"
    [accumulated] = [d for d in lint_source(path.read_text(encoding="utf-8"), str(path), Settings()).diagnostics
                     if d.code == "TL003"]
    edits = [e.new_text for f in accumulated.fixes for e in f.edits]
    assert any(t.startswith("float(") for t in edits) and f"`{edits[0]}`" in accumulated.message
    [carried] = diagnostics("tl005_lstm_hidden_tuple_no_detach.py", "TL005")
    assert "`state = tuple(t.detach() for t in state)`" in carried.message


# As llama-recipes writes it: the total adds the loss before it is scaled and
# backwarded, so the library alone cannot know `model` makes a tracked loss;
# only a caller that passes a module finds the hazard.
_LIBRARY_TRAIN = """\
def train(model, batches, steps):
    total_loss = 0.0
    for x in batches:
        loss = model(x).pow(2).mean()
        total_loss += loss
        loss = loss / steps
        loss.backward()
    return total_loss
"""


def _library_project(tmp_path: Path, callers: dict[str, str], library: str = _LIBRARY_TRAIN) -> list:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "train_utils.py").write_text(library)
    for name, text in callers.items():
        (tmp_path / name).write_text(text)
    run = lint_files(sorted(str(p) for p in tmp_path.rglob("*.py")), Settings(), jobs=1)
    return [d for r in run.results for d in r.diagnostics]


_SCRIPT = ("import torch\nimport torch.nn as nn\n\nfrom lib.train_utils import train\n\n\n"
           "def main():\n    return train(nn.Linear(3, 1), [torch.randn(2, 3) for _ in range(3)], 2)\n")


def test_an_accumulation_inside_another_files_function_is_named_as_that_file_writes_it(tmp_path: Path) -> None:
    """The loop and its `+=` are in `train`; this file's call passes the
    module that makes the loss tracked. The message quotes the statement and
    the function, not the call twice (`train(...)` accumulates `train(...)`)."""
    [d] = _library_project(tmp_path, {"script.py": _SCRIPT})
    assert (Path(d.path).name, d.code, d.range.start.line) == ("script.py", "TL003", 8)
    assert d.message.startswith("`train(nn.Linear(3, 1), ...)` runs `total_loss += loss` in a loop of `train`"
                                " (train_utils.py), where `loss` is tracked with what this call passes: every"
                                " iteration's graph stays reachable from `total_loss`")
    assert "Accumulate `loss.item()` (or `loss.detach()`) in `train` (train_utils.py) instead." in d.message
    assert sorted(f.description for f in d.fixes) == [
        "accumulate `loss.detach()`, a tensor without graph, in `train` (train_utils.py)",
        "accumulate `loss.item()`, a Python number, in `train` (train_utils.py)"]
    assert all(not f.edits for f in d.fixes)  # the edit is in the other file


def test_calls_of_several_files_into_one_hazard_are_one_finding(tmp_path: Path) -> None:
    """A library loop reached from a script and from two tests that run the
    script's `main()`: one finding, at the first call in path order, the
    others its related locations."""
    test = "from script import main\n\n\ndef test_main():\n    main()\n"
    found = _library_project(tmp_path, {"script.py": _SCRIPT, "test_a.py": test, "test_b.py": test})
    [d] = found
    assert (Path(d.path).name, d.range.start.line) == ("script.py", 8)
    also = sorted((Path(r.path).name, r.range.start.line, r.role) for r in d.related
                  if r.message == "the same hazard, reached through this call too")
    assert also == [("test_a.py", 5, Role.ACCUMULATOR), ("test_b.py", 5, Role.ACCUMULATOR)]


def test_an_accumulation_the_library_reports_itself_is_not_repeated_at_its_callers(tmp_path: Path) -> None:
    """With a backward of the loss in the library's loop, the library's own
    analysis finds the hazard: the script's call adds no copy."""
    library = _LIBRARY_TRAIN.replace("        loss = loss / steps\n", "")
    [d] = _library_project(tmp_path, {"script.py": _SCRIPT}, library)
    assert (Path(d.path).name, d.code, d.range.start.line) == ("train_utils.py", "TL003", 5)
