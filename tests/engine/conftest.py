"""Shared fixtures: a fresh tape per test, in either semantics."""

from __future__ import annotations

import pytest

from tapelint_engine import errors, source, tape


@pytest.fixture
def fresh():
    """Reset the tape (ids from 0) and return a function to switch semantics."""

    def reset(semantics: str = "torch") -> None:
        tape.reset(semantics)
        errors.RAISED.clear()

    source.set_user_file(None)
    reset()
    yield reset
    tape.reset("torch")
