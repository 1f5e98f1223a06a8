"""What gets installed: every package folder is listed in pyproject.toml,
nothing squats a generic top-level name, and the linter imports without the
engine's numpy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _package_folders() -> set[str]:
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    found = set()
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join((name, *relative.parts)) if relative.parts else name)
    return found


def test_every_package_folder_is_listed():
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == _package_folders()


def test_no_generic_top_level_names():
    tops = {name.split(".")[0] for name in PYPROJECT["tool"]["setuptools"]["packages"]}
    assert tops == {"tapelint", "tapelint_engine"}


def test_the_linter_imports_and_runs_without_numpy(tmp_path):
    """Block numpy in a fresh interpreter: the CLI must still lint."""
    target = tmp_path / "t.py"
    target.write_text("import torch\nx = torch.ones(2, requires_grad=True)\nl = (x * x).sum()\n"
                      "l.backward()\nl.backward()\n", encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "numpy" or name.startswith("numpy."):
                    raise ImportError("numpy is blocked")
        sys.meta_path.insert(0, Block())
        from tapelint.cli import main
        sys.exit(main(["check", {str(target)!r}, "--jobs", "1", "--no-color"]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "TL004" in done.stdout and "numpy" not in done.stderr


def test_a_test_run_starts_without_configuration_warnings() -> None:
    """pytest-asyncio warns at the top of every run unless the fixture loop
    scope is configured; an unknown ini key would warn too."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_readme.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "asyncio_default_fixture_loop_scope" not in output and "PytestConfigWarning" not in output
    assert 'asyncio_default_fixture_loop_scope = "function"' in (ROOT / "pyproject.toml").read_text()


def test_the_metadata_builds_without_deprecation_warnings(tmp_path: Path) -> None:
    """setuptools deprecates what it will later refuse (a `license` table
    stops building in February 2027): the metadata builds without a warning
    of it, and names the license by its SPDX expression."""
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; from tapelint import build_backend; print(build_backend.prepare_metadata_for_build_wheel(sys.argv[1]))",
         str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,  # (setuptools reads the project where it runs)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Deprecat" not in done.stderr, done.stderr[-3000:]
    metadata = (tmp_path / done.stdout.split()[-1] / "METADATA").read_text(encoding="utf-8")
    assert "License-Expression: MIT" in metadata.splitlines()
