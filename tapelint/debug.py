"""Tracebacks of tapelint's own errors, shown on request.

An internal error is reported as one line (a user wants the findings, not
tapelint's stack), which leaves a bug report with only `TypeError: ...`.
`--show-traceback` or `TAPELINT_DEBUG=1` (as mypy's `--show-traceback`) also
prints the traceback to stderr. The flag sets the variable, so worker
processes started after it inherit the choice.
"""

from __future__ import annotations

import os
import sys
import traceback

ENV_VAR = "TAPELINT_DEBUG"
FLAG = "--show-traceback"
HELP = f"print the traceback of an internal error (also: {ENV_VAR}=1)"


def enable() -> None:
    os.environ[ENV_VAR] = "1"


def enabled() -> bool:
    return os.environ.get(ENV_VAR, "") not in ("", "0")


def internal_error(exc: BaseException) -> str:
    """The one-line report of `exc` (`Type: first line of the message`).
    When enabled, its traceback goes to stderr first; otherwise the line
    says how to see it."""
    message = (str(exc).strip().splitlines() or [""])[0]
    detail = f"{type(exc).__name__}: {message}"[:300]
    if enabled():
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        return detail
    return f"{detail} (run with {FLAG} to see the traceback)"
