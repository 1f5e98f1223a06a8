"""The compiled build (`TAPELINT_COMPILE=1`, `tapelint/build_backend.py`):
what it compiles, what it asks of the build, and that a wheel built with
it lints exactly as the pure-Python code does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tapelint import build_backend

ROOT = Path(__file__).parents[1]


def test_every_analysis_module_is_compiled_but_the_ones_said_not_to_be():
    modules = {path.relative_to(ROOT).as_posix()
               for folder in ("tapelint/analysis", "tapelint/analysis/interp") for path in (ROOT / folder).glob("*.py")}
    assert build_backend.NOT_COMPILED <= modules  # a module renamed away would be compiled unnoticed
    assert set(build_backend.compiled_modules(ROOT)) == modules - build_backend.NOT_COMPILED


@pytest.mark.parametrize("value, compiles", [("1", True), ("", False), ("0", False), ("yes", False)])
def test_only_a_wheel_asked_for_compiled_needs_mypy(monkeypatch, value, compiles):
    monkeypatch.setenv("TAPELINT_COMPILE", value)
    # (setuptools' own answer runs its setup in the working directory: not here)
    monkeypatch.setattr(build_backend._setuptools._BuildMetaBackend, "get_requires_for_build_wheel",
                        lambda self, config_settings=None: ["setuptools-own"])
    requires = build_backend.get_requires_for_build_wheel()
    assert requires == (["setuptools-own", *build_backend.COMPILE_REQUIRES] if compiles else ["setuptools-own"])
    assert build_backend.get_requires_for_build_editable() == ["setuptools-own"]


def test_the_compiled_build_quiets_the_costly_warnings_on_compilers_taking_gccs_flags(monkeypatch):
    import mypyc.build
    import setuptools
    from setuptools import Extension

    shared = ["-O3", "-Werror"]  # (mypyc passes one list to every extension)
    made = [Extension("a", ["a.c"], extra_compile_args=shared), Extension("b", ["b.c"], extra_compile_args=shared),
            Extension("c", ["c.c"], extra_compile_args=["/O2"])]  # MSVC's
    monkeypatch.setattr(mypyc.build, "mypycify", lambda paths, opt_level: made)
    got: list = []
    monkeypatch.setattr(setuptools, "setup", lambda ext_modules: got.extend(ext_modules))
    backend = build_backend._Backend()
    backend.compile = True
    backend.run_setup()
    assert [e.extra_compile_args for e in got] == [
        ["-O3", "-Werror", *build_backend.QUIET_FLAGS], ["-O3", "-Werror", *build_backend.QUIET_FLAGS], ["/O2"]]


def _lint(python_path: str | None, semantics: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TAPELINT_CACHE_DIR")}
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--no-cache", "--jobs", "1", "--format", "json",
         "--semantics", semantics, str(ROOT / "fixtures")],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=900)
    assert done.returncode == 1, done.stderr  # the fixtures have findings; 2 would be an error
    return done.stdout


def test_a_compiled_wheel_lints_the_fixtures_as_the_source_does(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("tapelint", "engine"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = {**os.environ, "TAPELINT_COMPILE": "1", "MYPYC_OPT_LEVEL": "0"}
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
         str(source)], capture_output=True, text=True, env=env, timeout=1200)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("tapelint-*.whl")
    assert "none-any" not in wheel.name  # a platform wheel: extension modules inside
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target",
                                str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-3000:]
    probe = subprocess.run(
        [sys.executable, "-c", "import tapelint.analysis.state as s, tapelint.analysis.parsing as p;"
                               "print(s.__file__); print(p.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)}, timeout=60)
    state_file, parsing_file = probe.stdout.split()
    assert state_file.startswith(str(site)) and state_file.endswith(".so")  # compiled, and the one linting
    assert parsing_file.endswith(".py")  # left out, as `NOT_COMPILED` says
    for semantics in ("torch", "strict"):
        assert _lint(str(site), semantics, tmp_path) == _lint(None, semantics, tmp_path)
