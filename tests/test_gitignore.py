"""`.gitignore` matching, checked against git itself (`git check-ignore`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tapelint.gitignore import GitIgnore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the ground truth is git itself")

ROOT_IGNORE = """\
# a comment
*.log
/top_only.py
build-*/
docs/**/gen_*.py
**/cache
!keep.log
data/raw
\\#hash.py
tmp?.py
[ab]_x.py
"""
SUB_IGNORE = "local.py\n!important.log\n"
FILES = [
    "a.log", "keep.log", "src/b.log", "src/important.log", "top_only.py", "src/top_only.py",
    "build-x/m.py", "build-y", "docs/gen_a.py", "docs/x/y/gen_b.py", "docs/x/keep.py", "cache/c.py", "src/cache/d.py",
    "data/raw/e.py", "src/data/raw/f.py", "#hash.py", "tmp1.py", "tmp12.py", "a_x.py", "c_x.py",
    "src/local.py", "local.py", "src/ok.py",
]


def test_the_same_answers_as_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(ROOT_IGNORE)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / ".gitignore").write_text(SUB_IGNORE)
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    git = subprocess.run(["git", "check-ignore", "--no-index", *FILES], cwd=tmp_path, capture_output=True, text=True)
    expected = set(git.stdout.split())
    ours = GitIgnore()

    def ignored(name: str) -> bool:
        # A walk never enters an ignored directory: a file is ignored if it or any parent is.
        parts = Path(name).parts
        return any(ours.ignores(str(tmp_path.joinpath(*parts[:i])), is_directory=i < len(parts))
                   for i in range(1, len(parts) + 1))

    assert {name for name in FILES if ignored(name)} == expected
    assert "keep.log" not in expected and "docs/x/y/gen_b.py" in expected  # the cases are not trivial


def test_outside_a_work_tree_nothing_is_ignored(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "a.py").write_text("")
    assert not GitIgnore().ignores(str(tmp_path / "a.py"), is_directory=False)
