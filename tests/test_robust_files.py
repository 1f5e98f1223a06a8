"""Issue 10, discovery and reading: only regular files are read, symlink
loops are one error each, and the rest of the tree is still checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HAZARD = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks (POSIX)")


def check(cwd: Path, *paths: str) -> tuple[int, list[str]]:
    # A subprocess with a timeout: the bug this guards against is a hang.
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--isolated", "--no-color", "-q", "-j", "1", *paths],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )
    assert "Traceback" not in done.stdout + done.stderr and "internal error" not in done.stdout + done.stderr
    return done.returncode, done.stdout.splitlines()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "hazard.py").write_text(HAZARD)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "ping.py").symlink_to("pong.py")
    (tmp_path / "pong.py").symlink_to("ping.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")  # a directory loop
    (tmp_path / "sub" / "copy.py").write_text(HAZARD)
    return tmp_path


def test_special_files_and_loops_in_a_directory(tree: Path) -> None:
    code, lines = check(tree, ".")
    assert code == 1
    errors = sorted(line for line in lines if ": error: " in line)
    assert errors == [
        "fifo.py: error: not a regular file (a FIFO, socket or device), not checked",
        "ping.py: error: symlink loop (too many levels of symbolic links)",
        "pong.py: error: symlink loop (too many levels of symbolic links)",
        "self.py: error: symlink loop (too many levels of symbolic links)",
        "zero.py: error: not a regular file (a FIFO, socket or device), not checked",
    ]
    # The rest is checked, the directory loop visited once.
    assert sorted(line.split(":")[0] for line in lines if " TL004 " in line) == ["hazard.py", "sub/copy.py"]


@pytest.mark.parametrize("name", ["fifo.py", "zero.py", "self.py"])
def test_special_file_named_on_the_command_line(tree: Path, name: str) -> None:
    code, lines = check(tree, name, "hazard.py")
    assert code == 1
    [error] = [line for line in lines if ": error: " in line]
    assert error.startswith(f"{name}: error: ")
    assert any(line.startswith("hazard.py:5:1: TL004 ") for line in lines)


def test_a_directory_named_through_a_loop_is_checked_once(tree: Path) -> None:
    code, lines = check(tree, "sub", "sub/up/sub", "sub/up/sub/up/sub")
    assert code == 1
    assert [line.split(":")[0] for line in lines if " TL004 " in line] == ["sub/copy.py"]
