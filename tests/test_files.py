"""Discovery (what is checked, in which order, under which name) and decoding."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from tapelint.files import Excluder, SourceError, decode_source, discover, read_source


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def test_walks_recursively_in_sorted_order_only_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "b.py", "a.py", "pkg/z.py", "pkg/sub/m.py", "notes.txt", "pkg/data.json", "c.pyi")
    monkeypatch.chdir(tmp_path)
    assert discover(["."]).files == ("a.py", "b.py", os.path.join("pkg", "sub", "m.py"), os.path.join("pkg", "z.py"))


def test_paths_are_reported_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "src/a.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["src"]).files == ("src/a.py",)
    assert discover(["./src"]).files == ("./src/a.py",)
    assert discover([str(tmp_path / "src")]).files == (str(tmp_path / "src" / "a.py"),)


def test_skips_vcs_caches_and_virtualenvs(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "keep.py",
        ".git/hook.py",
        ".hg/x.py",
        "__pycache__/x.py",
        "node_modules/x.py",
        ".tox/x.py",
        ".venv/lib/x.py",
        "venv/lib/x.py",
        "dist/x.py",
        "site-packages/x.py",
        "myenv/lib/x.py",  # a virtualenv under any name: it holds pyvenv.cfg
        "build/kept.py",  # `build` and `env` are common package names: kept
        "env/kept.py",
    )
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    found = {os.path.relpath(f, tmp_path) for f in discover([str(tmp_path)]).files}
    assert found == {"keep.py", os.path.join("build", "kept.py"), os.path.join("env", "kept.py")}


def test_a_named_path_inside_a_skipped_directory_is_checked(tmp_path: Path) -> None:
    touch(tmp_path, "venv/lib/site-packages/torch/nn.py")
    named = str(tmp_path / "venv" / "lib" / "site-packages" / "torch")
    assert discover([named]).files == (os.path.join(named, "nn.py"),)


def test_a_named_file_is_checked_whatever_its_suffix(tmp_path: Path) -> None:
    touch(tmp_path, "script")
    assert discover([str(tmp_path / "script")]).files == (str(tmp_path / "script"),)


def test_exclude_globs_match_names_and_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "a.py", "test_a.py", "legacy/b.py", "tests/data/c.py", "tests/d.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["."], Excluder(("legacy", "test_*.py", "tests/data/*"))).files == ("a.py", "tests/d.py")
    assert discover(["."], Excluder(("./tests/",))).files == ("a.py", "legacy/b.py", "test_a.py")
    # user excludes apply to named paths too
    assert discover(["legacy/b.py", "a.py"], Excluder(("legacy",))).files == ("a.py",)


def test_each_file_once_named_order_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tmp_path, "a.py", "b.py")
    monkeypatch.chdir(tmp_path)
    assert discover(["b.py", ".", "a.py"]).files == ("b.py", "a.py")


def test_missing_named_path_is_an_error_entry(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.py")
    result = discover([missing])
    assert result.files == ()
    assert [(e.path, e.message) for e in result.errors] == [(missing, "no such file or directory")]


def test_directory_symlinks_are_not_followed(tmp_path: Path) -> None:
    touch(tmp_path, "pkg/a.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    assert discover([str(tmp_path)]).files == (str(tmp_path / "pkg" / "a.py"),)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"x = 'caf\xc3\xa9'\n", "x = 'café'\n"),
        (codecs.BOM_UTF8 + b"x = 1\n", "x = 1\n"),
        (b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n", "# -*- coding: latin-1 -*-\nx = 'café'\n"),
        (b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '\x80'\n", "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = '€'\n"),
        (b"", ""),
    ],
)
def test_decodes_as_python_does(data: bytes, text: str) -> None:
    assert decode_source(data) == text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"x = 'caf\xe9'\n", "cannot decode byte 0xe9 at 1:9 as utf-8; declare its encoding"),
        (b"a = 1\nb = 2\nc = 3\nx = '\xff'\n", "cannot decode byte 0xff at 4:6 as utf-8"),
        (b"x = 1\x00\n", "binary file (contains NUL bytes)"),
        (b"# coding: klingon\nx = 1\n", "bad encoding declaration: unknown encoding: klingon"),
        (codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n", "starts with a UTF-8 BOM but declares another encoding"),
    ],
)
def test_undecodable_bytes_are_one_clear_line(data: bytes, message: str) -> None:
    with pytest.raises(SourceError) as caught:
        decode_source(data)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_read_errors(tmp_path: Path) -> None:
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "dir.py").mkdir()
    with pytest.raises(SourceError, match="vanished or is a dangling symlink"):
        read_source(str(tmp_path / "dangling.py"))
    with pytest.raises(SourceError, match="is a directory"):
        read_source(str(tmp_path / "dir.py"))
