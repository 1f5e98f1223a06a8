"""`.gitignore` while walking directories, as git (and ruff) read it.

Only inside a git work tree (a directory holding `.git`, found upward from
the walked path): that tree's `.git/info/exclude` and every `.gitignore`
from its root down to the walked path's directory, deeper files after
shallower ones, the last matching pattern deciding (`!pattern` re-includes).
Patterns follow gitignore(5): a pattern without a `/` but at its end
matches a name at any depth, one with a `/` is anchored at its file's
directory, a trailing `/` matches directories only, `*` and `?` stop at
`/`, `**` crosses it. Git's global excludes file is not read: what a
project ignores should not depend on whose machine lints it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


@dataclass(frozen=True)
class IgnoreFile:
    """The patterns of one file, relative to `base` (an absolute directory)."""

    base: str
    patterns: tuple[Pattern, ...]


def parse(text: str, base: str) -> IgnoreFile:
    return IgnoreFile(base, tuple(p for p in map(_pattern, text.splitlines()) if p is not None))


def _pattern(line: str) -> Pattern | None:
    stripped = line.rstrip()
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped = stripped[:-1] + " "  # `\ ` keeps one trailing space
    line = stripped
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):
        line = line[1:]
    directory_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    body = _translate(line.lstrip("/"))
    prefix = "" if anchored else "(?:.*/)?"
    return Pattern(re.compile(f"^{prefix}{body}$", re.DOTALL), negated, directory_only)


def _translate(glob: str) -> str:
    """A gitignore glob (without its anchoring slash) as a regex over a
    `/`-separated relative path."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            inner = glob[i + 1:end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append(f"[{inner.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def ignored_by(files: tuple[IgnoreFile, ...], path: str, is_directory: bool) -> bool:
    """Does the last pattern of `files` (in order) that matches `path` ignore it?"""
    decision = False
    for ignore_file in files:
        relative = os.path.relpath(path, ignore_file.base).replace(os.sep, "/")
        if relative.startswith("../"):
            continue
        for pattern in ignore_file.patterns:
            if pattern.directory_only and not is_directory:
                continue
            if pattern.regex.match(relative):
                decision = not pattern.negated
    return decision


@dataclass(frozen=True)
class GitIgnore:
    """Answers "does git ignore this path?" for a walk, reading each
    directory's `.gitignore` once (hence the caches, `compare=False`)."""

    _roots: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)
    _files: dict[str, tuple[IgnoreFile, ...]] = field(default_factory=dict, compare=False, repr=False)

    def ignores(self, path: str, is_directory: bool) -> bool:
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute)
        root = self._work_tree(directory)
        if root is None:
            return False
        return ignored_by(self._files_for(directory, root), absolute, is_directory)

    def _work_tree(self, directory: str) -> str | None:
        if directory not in self._roots:
            parent = os.path.dirname(directory)
            if os.path.exists(os.path.join(directory, ".git")):
                self._roots[directory] = directory
            else:
                self._roots[directory] = None if parent == directory else self._work_tree(parent)
        return self._roots[directory]

    def _files_for(self, directory: str, root: str) -> tuple[IgnoreFile, ...]:
        cached = self._files.get(directory)
        if cached is not None:
            return cached
        if directory == root:
            files = tuple(f for f in (_read(os.path.join(root, ".git", "info", "exclude"), root),
                                      _read(os.path.join(root, GITIGNORE), root)) if f)
        else:
            own = _read(os.path.join(directory, GITIGNORE), directory)
            files = self._files_for(os.path.dirname(directory), root) + ((own,) if own else ())
        self._files[directory] = files
        return files


def _read(path: str, base: str) -> IgnoreFile | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse(handle.read(), base)
    except OSError:
        return None  # no such file (the usual case), or unreadable: nothing ignored by it
