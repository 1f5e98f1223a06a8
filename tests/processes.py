"""Helpers for tests that run programs in processes, and kill them (Linux `/proc`)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def write(tmp_path: Path, src: str, name: str = "prog.py") -> str:
    """The program `src` (dedented) written to `tmp_path / name`; its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(src))
    return str(path)
