"""Suite-wide settings.

Property-based tests explore new random cases on a developer's machine (that
is how they find bugs), but in CI (`CI` set, as CI services do) they replay a
fixed sequence, so a landing never fails on a case nobody has seen locally.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
