"""Suite-wide settings.

Property-based tests explore new random cases on a developer's machine (that
is how they find bugs), but in CI (`CI` set, as CI services do) they replay a
fixed sequence, so a landing never fails on a case nobody has seen locally.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests compare fresh lints (some patch the analysis, which the cache
    cannot see): the result cache is off unless a test turns it on."""
    monkeypatch.setenv("TAPELINT_NO_CACHE", "1")
