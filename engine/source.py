"""Which line of the user's program is running: the anchor of every report.

The runner sets `USER_FILE`; without it (library use, tests) the innermost
frame outside the engine package stands for the user.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

USER_FILE: str | None = None
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def set_user_file(path: str | None) -> None:
    global USER_FILE
    USER_FILE = os.path.abspath(path) if path else None


def user_line() -> int | None:
    """Line number of the innermost frame that belongs to the user's program."""
    frame: FrameType | None = sys._getframe(1)
    target = USER_FILE
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == target if target else not filename.startswith(_ENGINE_DIR):
            return frame.f_lineno
        frame = frame.f_back
    return None


def user_stack() -> tuple[int, ...]:
    """Lines of all the user's frames on the stack, outermost first: the calls a
    failure happened inside (PyTorch raises a custom Function's error in its own
    `backward`, which the program's `loss.backward()` line ran)."""
    return user_lines(limit=sys.maxsize)[::-1]


def user_lines(limit: int = 8) -> tuple[int, ...]:
    """Lines of the user's frames on the stack, innermost first (a node made inside a
    helper also names the line that called the helper)."""
    frame: FrameType | None = sys._getframe(1)
    target, lines = USER_FILE, list[int]()
    while frame is not None and len(lines) < limit:
        filename = frame.f_code.co_filename
        if filename == target if target else not filename.startswith(_ENGINE_DIR):
            lines.append(frame.f_lineno)
        frame = frame.f_back
    return tuple(lines)
