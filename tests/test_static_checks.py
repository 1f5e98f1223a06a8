"""mypy and ruff, with the configuration in pyproject.toml, report nothing.

Both are test extras, so CI has them; a developer without them gets a skip
that says so, and CI (`CI` set) a failure, so the check cannot silently
drop out of the suite.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_is_clean(tmp_path: Path) -> None:
    _require("mypy")
    done = _run("mypy", "--cache-dir", str(tmp_path / "mypy"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")


def test_ruff_is_clean() -> None:
    _require("ruff")
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_test_extra_installs_both() -> None:
    """`.ci/run` installs `.[test]`: that is what puts the checkers in CI."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {requirement.split(">")[0].split("=")[0].split("<")[0].strip() for requirement in extra["test"]}
    assert {"mypy", "ruff"} <= names
    assert ".[test]" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
