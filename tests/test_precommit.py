"""The hooks in `.pre-commit-hooks.yaml`, run by the real pre-commit on real
`git commit`s: a commit with a hazard is blocked, a clean one goes through,
and the fix hook rewrites the file and blocks until the fix is staged.

The hook repository is a snapshot of this checkout's files (tracked and
untracked, not ignored) committed to a temporary git repository, so the test
runs the hooks and the code as they are in the working tree, on a clean
clone as well as with uncommitted changes, and never touches this
repository's own git state. pre-commit installs it into a virtualenv of its
own (from PyPI: libcst), under a temporary PRE_COMMIT_HOME; that install is
most of the runtime, and is done once for the module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit", reason="the PyPI package pre-commit runs the hooks")
if shutil.which("git") is None:
    pytest.skip("pre-commit needs git", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent

BAD = """\
import torch

x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
feats = x.exp()
for step in range(3):
    loss = (feats * w).sum()
    loss.backward()
"""

GOOD = BAD.replace("feats = x.exp()\nfor step in range(3):\n", "for step in range(3):\n    feats = x.exp()\n")

# TL003 whose `.item()` fix is safe: the hook applies it.
FIXABLE = """\
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
total_loss = 0.0
for step in range(3):
    loss = (w * w).sum()
    loss.backward()
    total_loss += loss
print(total_loss / 3)
"""


def _run(args: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if check and completed.returncode != 0:
        raise AssertionError(f"{args} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    return completed


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n")
    environment = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT")) and key not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    environment.update(
        PRE_COMMIT_HOME=str(home / "pre-commit"),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
    )
    return environment


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory, env) -> tuple[Path, str]:
    """This checkout's working tree, committed to a repository of its own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True,
    )
    if listed.returncode != 0:
        pytest.skip("the checkout is not a git work tree")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():  # tracked but deleted in the work tree: not part of it
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    assert (repo / ".pre-commit-hooks.yaml").is_file()
    _run(["git", "init", "-q"], repo, env)
    _run(["git", "add", "-A"], repo, env)
    _run(["git", "commit", "-q", "-m", "snapshot"], repo, env)
    rev = _run(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()
    return repo, rev


def _project(tmp_path: Path, env: dict[str, str], hook_repo: tuple[Path, str], hook_id: str) -> Path:
    repo, rev = hook_repo
    project = tmp_path / "project"
    project.mkdir()
    _run(["git", "init", "-q"], project, env)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: {hook_id}\n"
    )
    _run([sys.executable, "-m", "pre_commit", "install"], project, env)
    _commit(project, env, ".pre-commit-config.yaml", "config")
    return project


def _commit(project: Path, env: dict[str, str], path: str, message: str) -> subprocess.CompletedProcess[str]:
    _run(["git", "add", path], project, env)
    return _run(["git", "commit", "-m", message], project, env, check=False)


def _head_subject(project: Path, env: dict[str, str]) -> str:
    return _run(["git", "log", "-1", "--format=%s"], project, env).stdout.strip()


def test_a_commit_with_a_hazard_is_blocked_and_a_clean_one_passes(tmp_path, env, hook_repo):
    project = _project(tmp_path, env, hook_repo, "tapelint")

    (project / "train.py").write_text(BAD)
    blocked = _commit(project, env, "train.py", "bad")
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "tapelint" in output and "Failed" in output
    assert "train.py:5:9: TL001" in output
    assert _head_subject(project, env) == "config"

    (project / "train.py").write_text(GOOD)
    passed = _commit(project, env, "train.py", "good")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout + passed.stderr
    assert _head_subject(project, env) == "good"


def test_the_fix_hook_fixes_then_lets_the_fixed_file_through(tmp_path, env, hook_repo):
    project = _project(tmp_path, env, hook_repo, "tapelint-fix")

    (project / "train.py").write_text(FIXABLE)
    blocked = _commit(project, env, "train.py", "unfixed")
    assert blocked.returncode != 0, blocked.stdout + blocked.stderr
    assert "files were modified by this hook" in blocked.stdout + blocked.stderr
    assert "total_loss += loss.item()" in (project / "train.py").read_text()
    assert _head_subject(project, env) == "config"

    passed = _commit(project, env, "train.py", "fixed")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert _head_subject(project, env) == "fixed"
