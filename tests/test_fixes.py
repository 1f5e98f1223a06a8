"""`check --fix` / `--diff`: every fix kind on the fixtures (the fixed program
lints clean and runs clean on the engine under the semantics of the finding),
the safety decisions, and the file handling (formatting, idempotence,
atomic writes, refusals)."""

from __future__ import annotations

import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache, lru_cache
from pathlib import Path

import pytest

from fixture_spec import fixture_paths, parse_fixture
from tapelint import cli
from tapelint.diagnostics import Edit, Fix, FixKind, Range, Safety, Semantics
from tapelint.document import lint_document
from tapelint.fixes import FixError, applicable_fix, apply_fixes, fix_file, fix_source
from tapelint.fixes import apply as fixes
from tapelint.settings import Settings

POSITIVES = [p for p in fixture_paths() if parse_fixture(p).expects]
# (fixture, semantics) for every expected finding.
CASES = sorted({(p, s) for p in POSITIVES for e in parse_fixture(p).expects for s in e.profiles},
               key=lambda c: (c[0].name, c[1]))
# Findings without a mechanical edit, why, and the fixes they still show
# (each display-only: a description, no edit).
NO_EDIT = {
    "tl001_rollouts_kept_for_inherited_loop.py": (
        "the kept value is made in the subclass's rollout hook and walked by the base class's inherited loop: "
        "detaching it (the rollouts then carry no gradient) or emptying the store between epochs changes what "
        "the algorithm trains, the user's decision", {"detach", "recompute"}),
    "tl004_partial_called_later.py": (
        "the loss comes from a call through a `functools.partial` object: the fix cannot prove the call "
        "returns a tensor in every iteration, so recomputing it inside the loop is advice", {"recompute"}),
    "tl005_adapted_weights_kept_across_tasks.py": (
        "what is carried is each element of `fast`, a list a comprehension rebuilds: there is no one name to "
        "detach where the iteration starts (the fix is to start each task from `params`)", {"detach"}),
    "tl002_optimize_parameters_fake_on_self.py": (
        "the backwards run in two methods and the shared value is read through `self`: "
        "neither combining nor detaching is local", {"combine", "detach"}),
    "tl004_autograd_grad_twice.py": (
        "the repeated call is `torch.autograd.grad`, whose result is assigned", {"remove", "retain_graph"}),
    "tl001_closure_cached_weights.py": (
        "the value is created inside `make_objective`, a function the module calls: an edit there is not in "
        "the statement the user reads (and would change every caller); recomputing needs the loop to call it",
        {"recompute", "detach"}),
    "tl002_strict_needed_retain_per_task_gradients.py": (
        "the first walk retains on purpose (each task's gradient is read in between): only a rewrite ports it",
        {"combine", "detach"}),
    "tl007_gan_retain_then_step.py": (
        "retain_graph=True kept the graph: moving the step would leave a walk a strict tape rejects",
        {"reorder", "recompute", "combine"}),
    "tl007_rollout_values_per_element_retain.py": (
        "the step already follows the backward: the stale values come from before the loop",
        {"reorder", "recompute", "combine"}),
    "tl007_carried_hidden_retain_graph.py": (
        "the stale state is carried from the previous iteration: the fix is a detach, the user's decision",
        {"reorder", "recompute", "combine"}),
    "tl003_second_output_of_unknown_model_summed.py": (
        "the kept value is what an unknown model returns, which may be no tensor (a tuple, a dict): "
        "`.detach()`/`.item()` there is a suggestion, not an edit", {"detach", "item"}),
    "tl003_unpacked_loss_of_unknown_loss_fn.py": (
        "the kept value is an element of what an unknown loss function returns, which may be no tensor: "
        "`.detach()`/`.item()` there is a suggestion, not an edit", {"detach", "item"}),
    "tl001_log_probs_kept_from_previous_episode.py": (
        "the value is computed in the loop and kept in a list on the policy: emptying the list after the "
        "backward is the fix, a statement whose place is the user's decision", {"recompute", "detach"}),
    "tl002_shared_in_both_branches.py": (
        "each arm of the if/else walks the freed value: the edits made for the two arms rewrite the same first "
        "backward and collide, so the one finding offers them as suggestions", {"combine", "detach"}),
    "tl007_optimizer_from_factory.py": (
        "retain_graph=True kept the graph: moving the step would leave a walk a strict tape rejects",
        {"reorder", "recompute", "combine"}),
    "tl007_step_inside_helper_method.py": (
        "the backward and the step run inside one helper called for both updates: reordering them is a rewrite",
        {"reorder", "recompute", "combine"}),
    "tl007_manual_update_under_no_grad.py": (
        "an update written by hand: where it may go is the user's decision", {"reorder", "recompute", "combine"}),
    "tl001_cache_filled_by_helper_method.py": (
        "the cached table is the loss's only way to the embedding: detached, the backward reaches no trainable "
        "leaf; it is made inside `fill`, a method the step calls", {"detach", "recompute"}),
    "tl001_flag_rebound_in_loop.py": (
        "the features are the loss's only way to the model: detached, the backward reaches no trainable leaf; "
        "they are made under `if warmup:` inside the loop already", {"detach", "recompute"}),
    "tl001_list_kept_across_episodes.py": (
        "each log-probability is the loss's only way to the weight: detached, the backward reaches no trainable "
        "leaf; it is made inside `select_action` (the fix is emptying the list per episode)", {"detach", "recompute"}),
    "tl001_shared_by_list_elements.py": (
        "`h` is every loss's only way to the network: detached, the backward reaches no trainable leaf; it is "
        "made inside the outer loop already (the fix is backwarding the sum once)", {"detach", "recompute"}),
    "tl002_helper_backward_retain_flag_default.py": (
        "both backwards run inside one helper called once per head: combining the losses or detaching `z` for "
        "one head rewrites the caller's two calls, the user's decision", {"combine", "detach"}),
    "tl005_cell_state_on_self_across_sequences.py": (
        "the carried state is remade at every time step of an inner loop whose steps must chain: a detach where "
        "it is remade would cut them apart; the fix is a reset before each sequence, whose place is the user's "
        "decision", {"detach"}),
    "tl007_gan_retain_then_step_content_loss.py": (
        "retain_graph=True kept the graph: moving the step would leave a walk a strict tape rejects",
        {"reorder", "recompute", "combine"}),
    "tl007_helper_step_stales_callers_loss.py": (
        "the backward and the step run inside one helper called for both updates: reordering them is a rewrite",
        {"reorder", "recompute", "combine"}),
    "tl007_optimizer_built_by_class_parameter.py": (
        "the step is `self.qf_optimizer.step()`, an attribute's: the reorder edit moves only a step of a name "
        "(what lies between may reach the optimizer through `self`)", {"reorder", "recompute", "combine"}),
    "tl003_meters_created_per_stat_name.py": (
        "the total is a meter's `self.sum += value * n`, in a helper whose callers also hand it numbers (the "
        "step's `mae`): an edit there is not known to work for every call", {"detach", "item"}),
    "tl003_callback_notified_by_name.py": (
        "the total is a callback's `self.total += loss`, in a method whose callers decide what `loss` is: an "
        "edit there is not known to work for every call", {"detach", "item"}),
    "tl003_step_outputs_kept_with_loss.py": (
        "what the loop keeps is the step's dict, which holds the loss under one key: `.detach()`/`.item()` of "
        "the dict is no edit", {"detach", "item"}),
    "tl005_stateful_neurons_in_sequential_not_reset.py": (
        "the membrane is remade at every time step of an inner loop whose steps must chain: a detach where it is "
        "remade would cut them apart; the fix is a reset of each neuron before each batch, whose place is the "
        "user's decision", {"detach"}),
    "tl001_features_returned_by_helper_before_loop.py": (
        "the features are made inside the backbone's `embed`, returned to a call before the loop: running that "
        "call under `torch.no_grad()` or in the loop is the user's decision at the call", {"detach", "recompute"}),
    "tl003_loss_kept_on_self_by_optimizer_closure.py": (
        "the history is an attribute of the trainer, which its users read (`len(trainer.history)`), and what it "
        "keeps is `self.last_loss`, an attribute too: neither edit is known to suit every reader",
        {"detach", "item"}),
    "tl001_inner_grad_through_weights_made_before_the_loop.py": (
        "`weights` is the loss's only way to `raw`, the tensor the gradient is taken with respect to: detached, "
        "`autograd.grad` finds `raw` unused; where to make it from `raw` is the user's decision",
        {"detach", "recompute"}),
    "tl005_strict_only_maml_fast_weights_of_the_inner_grad.py": (
        "the fast weights must chain from step to step (the meta-gradient runs through them): a detach would "
        "cut them apart; on a strict tape the inner gradient is taken another way (first-order MAML), the "
        "user's decision", {"detach"}),
    "tl007_submodules_added_by_name.py": (
        "the step is `self.dis_optimizer.step()`, an attribute's: the reorder edit moves only a step of a name "
        "(what lies between may reach the optimizer through `self`)", {"reorder", "recompute", "combine"}),
}
EDITED = [c for c in CASES if c[0].name not in NO_EDIT]
UNEDITED = [c for c in CASES if c[0].name in NO_EDIT]


def _settings(semantics: str, unsafe: bool = True) -> Settings:
    return Settings(semantics=Semantics(semantics), unsafe_fixes=unsafe)


def _codes(path: Path, semantics: str) -> set[str]:
    return {e.code for e in parse_fixture(path).expects if semantics in e.profiles}


@cache
def _fixed(path: Path, semantics: str) -> tuple[str, int, tuple]:
    source = path.read_text()
    text, count, result = fix_source(source, path.name, _settings(semantics))
    kinds = tuple(
        sorted({(d.code, applicable_fix(d, True).kind.value)
                for d in lint_document(source, path.name, _settings(semantics)).diagnostics
                if applicable_fix(d, True) is not None})
    )
    return text, count, (result, kinds)


@lru_cache(maxsize=1)
def _engine_runs(tmp: str) -> dict:
    """The engine on every fixed fixture, under the semantics of its finding."""
    from tapelint_engine.runner import run_program

    def run(case):
        path, semantics = case
        text, _, (result, _) = _fixed(path, semantics)
        target = Path(tmp) / f"{semantics}_{path.name}"
        target.write_text(text)
        watch = tuple(sorted({d.range.start.line for d in lint_document(path.read_text(), path.name,
                                                                          _settings(semantics)).diagnostics
                              if d.code == "TL003"}))
        return case, run_program(str(target), semantics, timeout=60, watch_lines=watch)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(run, EDITED))


@pytest.mark.parametrize("path,semantics", EDITED, ids=[f"{p.stem}-{s}" for p, s in EDITED])
def test_fixed_fixture_lints_clean(path, semantics):
    text, count, (result, _) = _fixed(path, semantics)
    assert count >= 1 and text != path.read_text()
    remaining = {d.code for d in result.diagnostics}
    assert not (remaining & _codes(path, semantics)), [d.message for d in result.diagnostics]


@pytest.mark.parametrize("path,semantics", UNEDITED, ids=[f"{p.stem}-{s}" for p, s in UNEDITED])
def test_finding_without_a_mechanical_edit_is_left_alone(path, semantics):
    """`--fix` leaves the file as it is, and the finding shows its fixes as
    display-only descriptions, each without an edit."""
    reason, kinds = NO_EDIT[path.name]
    text, count, (result, applied) = _fixed(path, semantics)
    assert (count, text, applied) == (0, path.read_text(), ()), reason
    for d in lint_document(path.read_text(), path.name, _settings(semantics)).diagnostics:
        assert {f.kind.value for f in d.fixes} == kinds, reason
        assert all(f.safety is Safety.DISPLAY_ONLY and not f.edits and f.description for f in d.fixes), reason


@pytest.mark.parametrize("path,semantics", EDITED, ids=[f"{p.stem}-{s}" for p, s in EDITED])
def test_fixed_fixture_runs_clean_on_the_engine(path, semantics, tmp_path_factory):
    pytest.importorskip("numpy")
    report = _engine_runs(str(tmp_path_factory.getbasetemp()))[(path, semantics)]
    assert report.status == "ok", f"{report.status}: {report.error} {report.detail} {report.output[-400:]}"
    if "TL003" in _codes(path, semantics) and semantics == "torch":
        # TL003 ran "ok" before too: the fix must stop the retention growing.
        # Not judged under strict: the engine's strict tape keeps every record
        # until a backward consumes it, so a loop without backward grows there
        # whatever it accumulates (neg_tl003_validation_item_without_no_grad too).
        for line in {s[0] for s in report.samples}:
            assert report.growth(line) == (0, 0)


def test_every_fix_kind_is_applied_on_some_fixture():
    applied = {kind for p, s in CASES for kind in _fixed(p, s)[2][1]}
    assert applied >= {
        ("TL001", "recompute"), ("TL001", "detach"), ("TL002", "combine"), ("TL002", "detach"),
        ("TL003", "item"), ("TL003", "detach"), ("TL004", "remove"), ("TL004", "recompute"),
        ("TL005", "detach"), ("TL006", "combine"), ("TL007", "reorder"),
    }


def test_retain_graph_is_never_applied():
    for path, semantics in CASES:
        for d in lint_document(path.read_text(), path.name, _settings(semantics)).diagnostics:
            for fix in d.fixes:
                if fix.kind is FixKind.RETAIN_GRAPH:
                    assert fix.safety is Safety.DISPLAY_ONLY and not fix.edits and fix.description
                if fix.safety is Safety.DISPLAY_ONLY:
                    assert not fix.edits


def test_safe_fixes_only_touch_reported_totals():
    """Without unsafe fixes only TL003 changes: `.item()` where the total is
    only reported and the analysis knows each added value to hold one element
    (`(w * w).sum()`, and `2 * loss` of it, in both arms), `.detach()` where
    the total is read with `.item()`."""
    changed = {}
    for path, semantics in CASES:
        text, _, _ = fix_source(path.read_text(), path.name, _settings(semantics, unsafe=False))
        if text != path.read_text():
            changed[path.name] = [line.strip() for line in text.splitlines() if line not in path.read_text()]
    assert changed == {
        "tl003_total_loss_plus_equals.py": ["total_loss += loss.item()  # should be loss.item()"],
        "tl003_eval_loop_without_no_grad.py": ["val_loss += F.cross_entropy(logits, y).item()"],
        "tl003_dict_metric_accumulation.py": ['metrics["loss"] += loss.detach()'],
        "tl003_total_equals_total_plus_loss.py": ["running = running + loss.detach()"],
        "tl003_total_in_both_branches.py": ["total += loss.item()", "total += (2 * loss).item()"],
        "tl003_criterion_value_not_named_loss.py": ["running += q.item()"],
        "tl003_loss_or_zero_accumulated.py": ["total += float(term)"],
        "tl003_number_helper_keeps_a_tensor.py": ["total += as_float(loss).detach()"],
        "tl003_running_total_add_inplace.py": ["running.add_(loss.item())  # should be loss.detach() (or loss.item())"],
    }


def test_item_is_unsafe_when_the_total_is_used_otherwise():
    source = (
        "import torch\nimport torch.nn.functional as F\nw = torch.ones(2, requires_grad=True)\n"
        "total = 0.0\nfor step in range(3):\n    loss = F.mse_loss(w, torch.zeros(2))\n"
        "    loss.backward()\n    total += loss\nsave(total)\n"
    )
    (diagnostic,) = lint_document(source, "t.py", _settings("torch")).diagnostics
    # `.item()` would break `save(total)` if it reads a tensor: a suggestion only, never an edit.
    assert [(f.kind, f.safety, bool(f.edits)) for f in diagnostic.fixes] == [
        (FixKind.DETACH, Safety.UNSAFE, True), (FixKind.ITEM, Safety.DISPLAY_ONLY, False)]
    assert fix_source(source, "t.py", _settings("torch", unsafe=False))[0] == source


def test_item_is_unsafe_for_a_value_not_known_to_be_scalar():
    source = (
        "import torch\nw = torch.ones(2, requires_grad=True)\ntotal = 0.0\nfor step in range(3):\n"
        "    out = (w * step).exp()\n    loss = out.sum()\n    loss.backward()\n    total += out\n"
        "print(total)\n"
    )
    (diagnostic,) = lint_document(source, "t.py", _settings("torch")).diagnostics
    # `out` has many elements: `.item()` would raise, so it is a suggestion without an edit.
    assert [(f.kind, f.safety, bool(f.edits)) for f in diagnostic.fixes] == [
        (FixKind.DETACH, Safety.SAFE, True), (FixKind.ITEM, Safety.DISPLAY_ONLY, False)]


FORMATTED = (
    "import torch   # imports\n"
    "import torch.nn.functional as F\n"
    "w = torch.tensor([1.0, 2.0],\n"
    "                 requires_grad=True)  # odd wrap\n"
    "total  =  0.0\n"
    "for step in range(3):   # loop\n"
    "    # compute\n"
    "    loss = F.mse_loss( w * w , torch.zeros(2) )\n"
    "    loss.backward()\n"
    "\n"
    "    total  +=  loss   # accumulate\n"
    "print( 'mean', total / 3 )\n"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_formatting_and_comments_are_preserved(newline):
    source = FORMATTED.replace("\n", newline)
    text, count, result = fix_source(source, "t.py", _settings("torch", unsafe=False))
    assert count == 1 and not result.diagnostics
    assert text == source.replace("total  +=  loss   #", "total  +=  loss.item()   #")


def test_inserted_lines_follow_the_indentation_and_keep_comments():
    source = (
        "import torch\nimport torch.nn as nn\nrnn = nn.RNN(3, 4)\nh = None\n"
        "if True:\n\tfor step in range(3):\n\t\t# forward\n\t\tout, h = rnn(torch.randn(5, 1, 3), h)\n"
        "\t\tout.sum().backward()  # step\n"
    )
    text, count, _ = fix_source(source, "t.py", _settings("torch"))
    assert count == 1
    assert "\tfor step in range(3):\n\t\tif h is not None:\n\t\t\th = h.detach()\n\t\t# forward\n" in text
    assert text.replace("\t\tif h is not None:\n\t\t\th = h.detach()\n", "") == source


FIXTURES = Path(__file__).parent.parent / "fixtures"


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(FIXTURES / name, target)
    return target


def test_second_fix_changes_nothing_and_does_not_touch_the_file(tmp_path):
    target = _copy(tmp_path, "tl005_lstm_hidden_tuple_no_detach.py")
    first = fix_file(str(target), _settings("torch"))
    assert first.written and first.fixed_count == 1
    before = target.stat().st_mtime_ns
    second = fix_file(str(target), _settings("torch"))
    assert not second.written and second.fixed_count == 0 and not second.changed
    assert target.stat().st_mtime_ns == before


def test_every_fixture_reaches_a_fixed_point():
    for path, semantics in CASES:
        text, _, _ = _fixed(path, semantics)
        assert fix_source(text, path.name, _settings(semantics))[0] == text, path.name


def test_atomic_write_keeps_permissions_and_leaves_no_temporary(tmp_path):
    target = _copy(tmp_path, "tl003_total_loss_plus_equals.py")
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    fixed = fix_file(str(target), _settings("torch"))
    assert fixed.written and "total_loss += loss.item()" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_symlink_stays_a_symlink(tmp_path):
    real = _copy(tmp_path, "tl003_total_loss_plus_equals.py")
    link = tmp_path / "link.py"
    link.symlink_to(real.name)
    assert fix_file(str(link), _settings("torch")).written
    assert link.is_symlink() and "loss.item()" in real.read_text()


def test_a_file_modified_since_it_was_read_is_refused(tmp_path, monkeypatch):
    target = _copy(tmp_path, "tl003_total_loss_plus_equals.py")
    edited = target.read_text() + "# edited meanwhile\n"
    original = fixes.fix_source

    def concurrent_edit(*args, **kwargs):
        outcome = original(*args, **kwargs)
        target.write_text(edited)
        return outcome

    monkeypatch.setattr(fixes, "fix_source", concurrent_edit)
    with pytest.raises(FixError, match="changed since it was read"):
        fix_file(str(target), _settings("torch"))
    assert target.read_text() == edited
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_file_without_applicable_fix_is_never_touched(tmp_path):
    target = _copy(tmp_path, "tl004_autograd_grad_twice.py")
    before = target.stat().st_mtime_ns
    fixed = fix_file(str(target), _settings("torch"))
    assert not fixed.written and fixed.fixed_count == 0 and [d.code for d in fixed.result.diagnostics] == ["TL004"]
    assert target.stat().st_mtime_ns == before


def test_overlapping_fixes_wait_for_the_next_pass():
    def fix(line: int, column: int, end: int, text: str) -> Fix:
        return Fix(FixKind.REMOVE, Safety.SAFE, "", (Edit(Range.of(line, column, line, end), text),))

    texts, applied = apply_fixes({None: "abcdef\nxyz\n"}, [fix(1, 0, 3, "A"), fix(1, 2, 4, "B"), fix(2, 0, 1, "X")])
    assert texts[None] == "Adef\nXyz\n" and applied == 2
    texts, applied = apply_fixes({None: "ab\n"}, [fix(1, 0, 2, "Z"), fix(1, 0, 2, "Z")])
    assert texts[None] == "Z\n" and applied == 2  # the same edit from two diagnostics


def test_a_fix_that_would_break_the_syntax_is_not_applied(monkeypatch):
    source = (FIXTURES / "tl004_mul_const_twice.py").read_text()
    real = fixes.lint_document

    def broken_fix(text, path, settings):
        result = real(text, path, settings)
        return replace(result, diagnostics=tuple(
            replace(d, fixes=(Fix(FixKind.REMOVE, Safety.SAFE, "", (Edit(d.range, "loss.backward("),)),))
            for d in result.diagnostics))

    monkeypatch.setattr(fixes, "lint_document", broken_fix)
    text, count, result = fix_source(source, "t.py", _settings("torch"))
    assert text == source and count == 0 and [d.code for d in result.diagnostics] == ["TL004"]


# --- the command line ------------------------------------------------------------


def test_diff_prints_a_unified_diff_writes_nothing_and_exits_1(tmp_path, capsys, monkeypatch):
    target = _copy(tmp_path, "tl003_total_loss_plus_equals.py")
    source = target.read_bytes()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--diff", target.name]) == 1
    out, err = capsys.readouterr()
    assert out == (
        f"--- {target.name}\n+++ {target.name}\n@@ -19,6 +19,6 @@\n"
        "     loss = F.mse_loss(model(x), y)\n     loss.backward()\n     opt.step()\n"
        "-    total_loss += loss  # should be loss.item()\n+    total_loss += loss.item()  # should be loss.item()\n"
        " \n" ' print("mean loss", total_loss / 4)\n'
    )
    assert "Would fix 1 diagnostic" in err
    assert target.read_bytes() == source


def test_diff_without_changes_exits_0(tmp_path, capsys):
    target = _copy(tmp_path, "tl004_autograd_grad_twice.py")  # a finding, but no edit
    assert cli.main(["check", "--diff", str(target)]) == 0
    out, _ = capsys.readouterr()
    assert out == ""


def test_diff_shows_unsafe_fixes_only_when_asked(tmp_path, capsys):
    target = _copy(tmp_path, "tl004_mul_const_twice.py")
    assert cli.main(["check", "--diff", str(target)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "Would fix 0 diagnostics (1 more with `--unsafe-fixes`)\n" in err
    assert cli.main(["check", "--diff", "--unsafe-fixes", str(target)]) == 1
    out, err = capsys.readouterr()
    assert "-loss.backward()\n" in out and "Would fix 1 diagnostic\n" in err


def test_fix_reports_what_remains_and_a_summary(tmp_path, capsys):
    fixable = _copy(tmp_path, "tl004_mul_const_twice.py")
    unfixable = _copy(tmp_path, "tl004_autograd_grad_twice.py")
    assert cli.main(["check", "--fix", "--unsafe-fixes", "--no-color", str(tmp_path)]) == 1
    out, _ = capsys.readouterr()
    assert "Fixed 1 diagnostic\n" in out
    assert f"{unfixable}:12:" in out and str(fixable) not in out
    assert cli.main(["check", "--fix", "--unsafe-fixes", str(fixable)]) == 0
    out, _ = capsys.readouterr()
    assert "Fixed 0 diagnostics" in out


def test_fix_keeps_json_output_valid(tmp_path, capsys):
    import json

    target = _copy(tmp_path, "tl003_total_loss_plus_equals.py")
    assert cli.main(["check", "--fix", "--format", "json", str(target)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["diagnostics"] == [] and "Fixed 1 diagnostic" in err


def test_fix_never_loses_a_file_with_a_syntax_error(tmp_path, capsys):
    target = tmp_path / "broken.py"
    target.write_text("import torch\nx = torch.ones(2, requires_grad=True)\nloss = (x * x).sum(\n"
                      "loss.backward()\nloss.backward()\n")
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    assert cli.main(["check", "--fix", "--unsafe-fixes", str(target)]) == 1
    out, _ = capsys.readouterr()
    assert "TL900" in out
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before


def test_fix_says_how_many_more_unsafe_fixes_would_fix(tmp_path, capsys):
    target = _copy(tmp_path, "tl004_mul_const_twice.py")
    source = target.read_text()
    assert cli.main(["check", "--fix", "--no-color", str(target)]) == 1
    out, _ = capsys.readouterr()
    assert "Fixed 0 diagnostics (1 more with `--unsafe-fixes`)\n" in out
    assert "No fixes with `--fix` (1 more with `--unsafe-fixes`).\n" in out and "[*]" not in out
    assert target.read_text() == source
