"""The measured PyTorch 2.13 reference, found one way by every test.

The data lives in the repository (`reference/torch/`): the op cases the op
tables are checked against, the exact message texts, and the probe that
measured them. A missing file is a broken checkout, never a reason to skip:
`load_json` raises, so the suite fails at collection instead of quietly
running fewer checks than CI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference" / "torch"
SAVED_OPS = REFERENCE_DIR / "torch-saved-ops.json"
SEMANTICS = REFERENCE_DIR / "torch-semantics.json"
PROBE = REFERENCE_DIR / "probe_saved.py"


class ReferenceMissing(FileNotFoundError):
    """A reference file is not where the repository keeps it."""


def path_of(path: Path) -> Path:
    """`path`, checked to exist (the one place that decides what "missing" means)."""
    if not path.is_file():
        raise ReferenceMissing(f"measured PyTorch reference missing: {path} (it is part of the repository)")
    return path


def load_json(path: Path) -> Any:
    return json.loads(path_of(path).read_text(encoding="utf-8"))


def saved_op_cases() -> dict[str, dict[str, Any]]:
    """The measured op cases, without the `__meta__` entries."""
    return {k: v for k, v in load_json(SAVED_OPS).items() if not k.startswith("__")}
