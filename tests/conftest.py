"""Suite-wide settings.

Property-based tests explore new random cases on a developer's machine (that
is how they find bugs), but in CI (`CI` set, as CI services do) they replay a
fixed sequence, so a landing never fails on a case nobody has seen locally.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).parents[1]


def pytest_sessionstart(session: pytest.Session) -> None:
    """The tests start thousands of Python subprocesses (the CLI, the
    engine's sandboxed children) that import tapelint and the engine from
    this tree. Where bytecode is not written (`PYTHONDONTWRITEBYTECODE`, as
    on this project's machines, and always in the engine's children) each of them
    compiled those modules from source again: a third of a child's start.
    Compiled once here, by the session that starts the workers."""
    if not hasattr(session.config, "workerinput"):
        for package in ("tapelint", "engine"):
            compileall.compile_dir(ROOT / package, quiet=2)


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests compare fresh lints (some patch the analysis, which the cache
    cannot see): the result cache is off unless a test turns it on."""
    monkeypatch.setenv("TAPELINT_NO_CACHE", "1")
