"""Install hints that work: tapelint is not on PyPI, so no document or
message may tell users to `pip install 'tapelint[...]'` by bare name; the
extras the hints name exist."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
TEXTS = {path: path.read_text(encoding="utf-8")
         for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "tapelint").rglob("*.py")]}


def test_no_hint_installs_tapelint_from_pypi_by_name() -> None:
    bare = re.compile(r"""pip install ['"]?tapelint\[[a-z]+\](?!\s*@)""")
    assert {str(path.relative_to(ROOT)) for path, text in TEXTS.items() if bare.search(text)} == set()


def test_every_extra_a_hint_names_exists() -> None:
    named = {extra for text in TEXTS.values() for extra in re.findall(r"""-e ['"]?\.\[([a-z]+)\]""", text)}
    assert named and named <= set(EXTRAS)
