"""Fixes: the edit builders, one module per fix kind (`detach`, `recompute`,
`combine`, `branch_detach`, `remove`, `accumulate`, `carry_detach`), each a
pure function from a hazard and the module to edits; and `apply`, which
applies the fixes rules attach to their diagnostics (`check --fix`, `--diff`).

`apply`'s API is re-exported here on first use: `apply` lints (it imports the
linter, whose rules import the edit builders of this package), so importing
it eagerly here would be an import cycle.
"""

from __future__ import annotations

from typing import Any

_APPLY = frozenset(
    ("FixedFile", "FixError", "FixRun", "applicable_fix", "apply_fixes", "fix_file", "fix_files", "fix_source",
     "has_applicable_fix", "hidden_fixes", "summary", "unified_diff", "write_diff")
)


def __getattr__(name: str) -> Any:
    if name in _APPLY:
        from tapelint.fixes import apply

        return getattr(apply, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
