"""`tapelint explain` on the error text users actually paste: tracebacks
produced here by running programs under real PyTorch (plain and in anomaly
mode), and burn's message as `semantics.md` quotes it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint.diagnostics import Semantics
from tapelint.explain import INPLACE, SECOND_BACKWARD, TAPE_CONSUMED, explain, parse_frames, recognize, render

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

BURN = (
    "Cannot run backward: graph tape has already been consumed at NodeId(3). Burn does not support"
    " retain_graph. Combine losses before backward or recompute the forward pass. Use detach() only to"
    " intentionally sever gradients through the previous computation."
)

# The measured case of `semantics.md` (torch-semantics.json, rnn_hidden_carried:
# carry_retain_graph_with_step): retain_graph=True keeps the carried graph,
# the optimizer step changes the weights in place, the next backward fails.
RETAINED_CARRY = """\
import torch
import torch.nn as nn

torch.manual_seed(0)
rnn = nn.RNNCell(2, 3)
opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
h = torch.zeros(1, 3)
for step in range(3):
    x = torch.randn(1, 2)
    h = rnn(x, h)
    loss = h.sum()
    opt.zero_grad()
    loss.backward(retain_graph=True)
    opt.step()
"""


def _torch_traceback(script: Path, anomaly: bool = False) -> str:
    """Run `script` under real PyTorch and return what it printed on stderr."""
    pytest.importorskip("torch")
    command = [sys.executable, str(script)]
    if anomaly:
        runner = "import runpy, sys, torch; torch.autograd.set_detect_anomaly(True); runpy.run_path(sys.argv[1], run_name='__main__')"
        command = [sys.executable, "-c", runner, str(script)]
    completed = subprocess.run(command, cwd=script.parent, capture_output=True, text=True, timeout=300)
    assert completed.returncode != 0, "the program was expected to fail"
    return completed.stderr


def _copy_fixture(name: str, directory: Path) -> Path:
    target = directory / name
    shutil.copy(FIXTURES / name, target)
    return target


@pytest.fixture(scope="module")
def hoisted(tmp_path_factory) -> tuple[Path, str]:
    """The TL001 fixture and its real PyTorch traceback (importing torch is
    most of a run's cost, so it runs once)."""
    script = _copy_fixture("tl001_hoisted_features.py", tmp_path_factory.mktemp("hoisted"))
    return script, _torch_traceback(script)


def test_real_second_backward_traceback_points_at_the_hoisted_value(hoisted, monkeypatch):
    script, traceback = hoisted
    assert "Trying to backward through the graph a second time" in traceback
    monkeypatch.chdir(script.parent)

    explanation = explain(traceback)
    assert explanation.recognized is not None and explanation.recognized.kind.key == SECOND_BACKWARD
    assert explanation.checked == ("tl001_hoisted_features.py",)  # torch's own frames are not linted
    assert any("site-packages" in path for path in explanation.skipped)
    [match] = explanation.matches
    assert match.on_traceback and match.diagnostic.code == "TL001"
    assert match.reason == "the traceback fails at line 14, the backward it predicts to fail"

    text = render(explanation)
    assert "TL001 hoisted-tracked-tensor" in text
    assert "tl001_hoisted_features.py:10:9: TL001 `feats` is computed once" in text
    assert "Why not `retain_graph=True`, as the message suggests?" in text
    assert "memory grows with every step" in " ".join(text.split())


def test_anomaly_mode_forward_frames_name_the_definition(tmp_path, monkeypatch):
    script = _copy_fixture("tl001_hoisted_features.py", tmp_path)
    traceback = _torch_traceback(script, anomaly=True)
    assert "Traceback of forward call that caused the error" in traceback
    forward = [frame for frame in parse_frames(traceback) if frame.forward]
    assert (str(script), 10) in [(frame.path, frame.line) for frame in forward]
    monkeypatch.chdir(tmp_path)

    [match] = explain(traceback).matches
    assert match.reason == (
        "the traceback fails at line 14, the backward it predicts to fail; "
        "anomaly mode names line 10, where it creates the reused value"
    )


def test_real_gan_traceback_names_the_shared_ancestor_rule(tmp_path):
    script = _copy_fixture("tl002_gan_without_fake_detach.py", tmp_path)
    explanation = explain(_torch_traceback(script))
    assert [(m.diagnostic.code, m.diagnostic.range.start.line, m.on_traceback) for m in explanation.matches] == [
        ("TL002", 30, True)
    ]
    assert explanation.checked == (str(script),)  # outside the working directory: shown as in the traceback


def test_real_inplace_error_after_retain_graph_points_at_the_retain_graph(tmp_path):
    script = tmp_path / "rnn.py"
    script.write_text(RETAINED_CARRY)
    traceback = _torch_traceback(script)
    assert "modified by an inplace operation" in traceback

    explanation = explain(traceback)
    assert explanation.recognized is not None and explanation.recognized.kind.key == INPLACE
    assert explanation.retain_graph_lines == ((str(script), 13),)
    text = render(explanation)
    assert f"past an optimizer step here:\n  {script}:13" in text
    words = " ".join(text.split())
    assert "saved at version 2 and now at version 3" in words
    assert "This error is frequently what `retain_graph=True` turns into" in words


def test_burn_message_names_the_rules_and_the_node():
    recognized = recognize(f"thread 'main' panicked at src/main.rs:42:10:\n{BURN}\nnote: run with `RUST_BACKTRACE=1`")
    assert recognized is not None and recognized.kind.key == TAPE_CONSUMED and recognized.node_id == 3
    text = " ".join(render(explain(BURN)).split())
    assert "error: burn: graph tape has already been consumed" in text
    assert "NodeId(3) is the 4th tensor the program created" in text
    for code in ("TL001", "TL002", "TL004", "TL005", "TL006"):
        assert code in text
    assert "No traceback frames in the text" in text
    assert "burn has no `retain_graph`" in text


def test_burn_error_lints_under_strict_semantics(tmp_path):
    """A reuse PyTorch lets pass (the shared `add` saves nothing) is what burn
    rejects: only the strict profile reports it."""
    script = _copy_fixture("tl002_strict_only_shared_add.py", tmp_path)
    # The fixture's header says where burn fails: `# strict: fails LINE node ...`.
    call_line = int(re.search(r"^# strict: fails (\d+)", script.read_text(), re.M).group(1))
    pasted = f'Traceback (most recent call last):\n  File "{script}", line {call_line}, in <module>\n{BURN}\n'
    explanation = explain(pasted)
    assert [(m.diagnostic.code, m.diagnostic.fails_under, m.on_traceback) for m in explanation.matches] == [
        ("TL002", (Semantics.STRICT,), True)
    ]
    assert "Checked under --semantics strict" in render(explanation)


def test_without_a_matching_line_the_closest_findings_are_shown(hoisted):
    script, _ = hoisted
    pasted = (
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 12, in <module>\n'
        "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed).\n"
    )
    [match] = explain(pasted).matches
    assert not match.on_traceback and match.diagnostic.code == "TL001"
    assert match.distance == 2  # lines 10 and 14 are both 2 away from 12
    assert "No finding is on a line of the traceback; the closest:" in render(explain(pasted))


def test_frame_formats(tmp_path):
    home = Path.home()
    text = (
        '  File "<string>", line 4, in <module>\n'
        '  File "/x/lib/python3.11/site-packages/torch/_tensor.py", line 623, in backward\n'
        "File ~/project/train.py:14, in train()\n"
        "Cell In[3], line 7\n"
    )
    frames = parse_frames(text)
    assert [(f.path, f.line, f.function) for f in frames] == [
        ("<string>", 4, "<module>"),
        ("/x/lib/python3.11/site-packages/torch/_tensor.py", 623, "backward"),
        (str(home / "project" / "train.py"), 14, "train()"),
    ]


def test_unrecognised_text():
    explanation = explain("ValueError: something else entirely")
    assert explanation.recognized is None
    assert render(explanation).startswith("tapelint does not recognise a graph-lifetime error in this text.")


def _cli(args: list[str], stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tapelint", "explain", *args], input=stdin, cwd=cwd, capture_output=True,
        text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120,
    )


def test_cli_reads_stdin_or_arguments(hoisted, tmp_path):
    script, traceback = hoisted
    from_stdin = _cli([], traceback, script.parent)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert "tl001_hoisted_features.py:10:9: TL001" in from_stdin.stdout

    from_argument = _cli([BURN], "", tmp_path)
    assert from_argument.returncode == 0 and "NodeId(3)" in from_argument.stdout

    assert _cli(["KeyError: 'x'"], "", tmp_path).returncode == 1
    empty = _cli([], "  \n", tmp_path)
    assert empty.returncode == 2 and "no error message given" in empty.stderr
