"""The build: pure Python, or with `TAPELINT_COMPILE=1` the analysis compiled
to C by mypyc (about 28% less CPU on real code: docs/performance.md).

`pyproject.toml` names this module as its PEP 517 backend (in-tree, through
`backend-path`). It is setuptools' backend, with two changes when a wheel is
built with `TAPELINT_COMPILE=1` (`pip install .`): mypy and libcst join
the build's requirements, and the modules `compiled_modules` lists become mypyc's extension modules
(a C compiler and Python's headers are needed; the build fails, loudly,
without them). An editable install, an sdist and the metadata are never
compiled: a compiled module would shadow the source a developer edits.

A module is left out (`NOT_COMPILED`) for what mypyc does not run as CPython
does: `parsing` patches libcst's classes with one of its functions (a
compiled function does not bind as a method); `findings` declares a class
variable on frozen dataclasses (`Hazard.kind`), which mypyc's dataclasses
mistake for a field. `tests/test_compiled.py` builds a compiled wheel
and lints the fixtures both ways.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from setuptools import build_meta as _setuptools

# The analysis: where a lint spends its CPU (docs/performance.md).
_ANALYSIS = ("tapelint/analysis", "tapelint/analysis/interp")
NOT_COMPILED = frozenset(("tapelint/analysis/parsing.py", "tapelint/analysis/findings.py"))
# A compiled wheel's build requirements: the mypy the code is checked with, and
# libcst, whose types mypyc reads (it compiles what it can type-check).
COMPILE_REQUIRES = ["mypy>=2.4,<2.5", "libcst>=1.1"]
# Warnings nobody reads in generated C that cost the build: GCC's check of
# misleading indentation tracks every line of mypyc's 350,000-line file
# (two thirds of the compile at -O0: 120 s -> 44 s of CPU).
QUIET_FLAGS = ("-Wno-misleading-indentation",)


def compiled_modules(root: Path) -> list[str]:
    """The source files mypyc compiles, relative to the project's `root`."""
    found = []
    for folder in _ANALYSIS:
        for path in sorted((root / folder).glob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative not in NOT_COMPILED:
                found.append(relative)
    return found


def asked() -> bool:
    """Is a compiled build asked for (`TAPELINT_COMPILE=1`)?"""
    return os.environ.get("TAPELINT_COMPILE", "").strip() == "1"


class _Backend(_setuptools._BuildMetaBackend):
    """setuptools' backend, compiling the analysis for a wheel when asked."""

    def __init__(self) -> None:
        super().__init__()
        self.compile = False  # set only while `build_wheel` runs with `asked()`

    def run_setup(self, setup_script: str = "setup.py") -> None:
        from setuptools import setup

        if not self.compile:
            setup()
            return
        from mypyc.build import mypycify

        # (mypyc's own knob, as its command line reads it: the tests build at 0, faster to compile)
        extensions = mypycify(compiled_modules(Path.cwd()), opt_level=os.environ.get("MYPYC_OPT_LEVEL", "3"))
        for extension in extensions:
            if any(arg.startswith("-W") for arg in extension.extra_compile_args):  # a compiler taking GCC's flags
                extension.extra_compile_args = [*extension.extra_compile_args, *QUIET_FLAGS]  # (mypyc shares one list)
        setup(ext_modules=extensions)

    def get_requires_for_build_wheel(self, config_settings: Optional[dict[str, Any]] = None) -> list[str]:
        requires = super().get_requires_for_build_wheel(config_settings)
        return requires + COMPILE_REQUIRES if asked() else requires

    def get_requires_for_build_editable(self, config_settings: Optional[dict[str, Any]] = None) -> list[str]:
        return super().get_requires_for_build_wheel(config_settings)

    def build_wheel(self, wheel_directory: Any, config_settings: Optional[dict[str, Any]] = None,
                    metadata_directory: Optional[Any] = None) -> str:
        self.compile = asked()
        try:
            return super().build_wheel(wheel_directory, config_settings, metadata_directory)
        finally:
            self.compile = False


_BACKEND = _Backend()
get_requires_for_build_wheel = _BACKEND.get_requires_for_build_wheel
get_requires_for_build_sdist = _BACKEND.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _BACKEND.prepare_metadata_for_build_wheel
build_wheel = _BACKEND.build_wheel
build_sdist = _BACKEND.build_sdist
get_requires_for_build_editable = _BACKEND.get_requires_for_build_editable
prepare_metadata_for_build_editable = _BACKEND.prepare_metadata_for_build_editable
build_editable = _BACKEND.build_editable
