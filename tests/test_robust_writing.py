"""Issue 10, `--fix` writing: a signal mid-write leaves the file whole and
no temporary file behind; hard links are kept (written in place)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint.fixes import fix_file
from tapelint.settings import Settings

FIXTURE = Path(__file__).parent.parent / "fixtures" / "tl003_total_loss_plus_equals.py"
posix = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signals")

# Sends itself SIGTERM (or SIGINT) while the fixed file is being written. A
# shell's background job (`pytest &`, a CI runner's) inherits SIGINT ignored,
# as Python then leaves it: the child takes Ctrl-C as a foreground job would.
SCRIPT = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
real_fsync = os.fsync
def fsync(fd):
    os.kill(os.getpid(), signal.{signal})
    time.sleep(0.3)
    real_fsync(fd)
os.fsync = fsync
from tapelint.cli import main
sys.exit(main(["check", "--fix", "--isolated", "-q", "target.py"]))
"""


@posix
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_during_the_write_leaves_no_temporary_file(tmp_path: Path, name: str) -> None:
    shutil.copy(FIXTURE, tmp_path / "target.py")
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(signal=name)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0  # the signal still ends the run...
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target.py"]  # ...but no stray file
    assert "total_loss += loss.item()" in (tmp_path / "target.py").read_text()  # and the file is whole


def test_hard_links_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "target.py"
    shutil.copy(FIXTURE, target)
    os.link(target, tmp_path / "other.py")
    mode = target.stat().st_mode
    assert fix_file(str(target), Settings()).written
    assert (tmp_path / "other.py").read_text() == target.read_text()
    assert "total_loss += loss.item()" in target.read_text()
    assert target.stat().st_nlink == 2 and target.stat().st_mode == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.py", "target.py"]
