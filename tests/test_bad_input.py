"""Every kind of bad input is one clear line, the other files are still
checked, the exit code says what happened, and no traceback is printed."""

from __future__ import annotations

import codecs
import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tapelint.cli
import tapelint.files
import tapelint.runner
from tapelint.cli import main
from tapelint.files import Discovery

HAZARD = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
# Mentions a backward, so the pre-check does not skip it: the parser really runs.
CLEAN_HEADER = "import torch\nw = torch.ones(2, requires_grad=True)\n(w * w).sum().backward()\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with one real finding (`hazard.py`) and one clean file,
    beside which each test drops its bad file."""
    (tmp_path / "hazard.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text(CLEAN_HEADER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    code = main(["check", "--no-color", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out.splitlines(), err


def error_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if ": error: " in line]


def assert_others_checked(lines: list[str]) -> None:
    assert any(line.startswith("hazard.py:5:1: TL004 ") for line in lines)


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("latin1.py", b"name = 'caf\xe9'\n", "latin1.py: error: cannot decode byte 0xe9 at 1:12 as utf-8; declare its encoding"),
        ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary.py: error: binary file (contains NUL bytes), not checked"),
        ("cookie.py", b"# coding: no-such-codec\nx = 1\n", "cookie.py: error: bad encoding declaration: unknown encoding: no-such-codec"),
    ],
)
def test_unreadable_content_is_one_error_line(
    tree: Path, capsys: pytest.CaptureFixture[str], jobs: str, name: str, data: bytes, message: str
) -> None:
    (tree / name).write_bytes(data)
    code, lines, _ = check(capsys, "--jobs", jobs)
    assert code == 1
    assert len(error_lines(lines)) == 1 and error_lines(lines)[0].startswith(message)
    assert_others_checked(lines)
    assert lines[-1] == "Found 1 diagnostic in 1 file (2 files checked). 1 file could not be checked."


@pytest.mark.parametrize(
    "data",
    [
        b"# -*- coding: latin-1 -*-\n" + CLEAN_HEADER.encode() + b"name = 'caf\xe9'\n",
        codecs.BOM_UTF8 + CLEAN_HEADER.encode() + "name = 'café'\n".encode(),
        b"",
    ],
    ids=["latin1-with-cookie", "bom", "empty"],
)
def test_declared_encodings_bom_and_empty_files_are_fine(tree: Path, capsys: pytest.CaptureFixture[str], data: bytes) -> None:
    (tree / "fine.py").write_bytes(data)
    code, lines, _ = check(capsys)
    assert code == 1 and error_lines(lines) == []
    assert_others_checked(lines)
    assert lines[-1].startswith("Found 1 diagnostic in 1 file (3 files checked")  # the empty one may be skipped


def test_syntax_error_is_tl900_at_the_parsers_line(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "broken.py").write_text(CLEAN_HEADER + "x = [1,\n     2,\ny = 3\n")
    code, lines, _ = check(capsys, "--format", "json")
    document = json.loads("\n".join(lines))
    [tl900] = [d for d in document["diagnostics"] if d["code"] == "TL900"]
    compile_error = pytest.raises(SyntaxError, compile, (tree / "broken.py").read_text(), "broken.py", "exec").value
    assert tl900["range"]["start"] == {"line": compile_error.lineno, "column": compile_error.offset - 1}
    assert "\n" not in tl900["message"] and "expected one of" not in tl900["message"]
    assert code == 1 and document["files_checked"] == 3


def test_tl900_from_the_full_parser_names_the_real_position(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A backward keeps the pre-check from skipping the file: libcst parses it and fails.
    (tree / "broken.py").write_text(CLEAN_HEADER + "def f(:\n    pass\n")
    code, lines, _ = check(capsys)
    assert "broken.py:4:7: TL900 syntax error: invalid syntax" in lines
    assert lines[lines.index("broken.py:4:7: TL900 syntax error: invalid syntax") + 2] == "4 | def f(:"
    assert_others_checked(lines)


def test_vanished_file(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "gone.py").write_text("x = 1\n")
    real_discover = tapelint.cli.discover

    def discover_then_delete(*args: object, **kwargs: object) -> Discovery:
        found = real_discover(*args, **kwargs)  # type: ignore[arg-type]
        os.remove("gone.py")
        return found

    monkeypatch.setattr(tapelint.cli, "discover", discover_then_delete)
    code, lines, _ = check(capsys)
    assert code == 1
    assert error_lines(lines) == ["gone.py: error: file vanished or is a dangling symlink"]
    assert_others_checked(lines)


def test_dangling_symlink_and_directory_named_like_a_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "link.py").symlink_to(tree / "nowhere.py")
    (tree / "pkg.py").mkdir()  # a directory is walked, not read
    (tree / "pkg.py" / "inner.py").write_text(CLEAN_HEADER)
    code, lines, _ = check(capsys)
    assert code == 1
    assert error_lines(lines) == ["link.py: error: file vanished or is a dangling symlink"]
    assert lines[-1] == "Found 1 diagnostic in 1 file (3 files checked). 1 file could not be checked."


def test_permission_denied(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root, for whom chmod 000 changes nothing: refuse the open instead.
    (tree / "secret.py").write_text("x = 1\n")
    real_open = os.open

    def guarded_open(path: str, *args: object, **kwargs: object) -> int:
        if os.path.basename(path) == "secret.py":
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tapelint.files.os, "open", guarded_open)
    code, lines, _ = check(capsys, "--jobs", "1")
    assert code == 1
    assert error_lines(lines) == ["secret.py: error: permission denied"]
    assert_others_checked(lines)


def test_directory_without_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    code, lines, err = check(capsys, str(tmp_path))
    assert (code, lines) == (0, [])
    assert err == f"tapelint: warning: no Python files found under {tmp_path}\n"


def test_100k_line_file(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "long.py").write_text(CLEAN_HEADER + "".join(f"v{i} = {i}\n" for i in range(100_000)))
    code, lines, _ = check(capsys)
    assert code == 1 and error_lines(lines) == []
    assert lines[-1] == "Found 1 diagnostic in 1 file (3 files checked)."


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "(" * 1000 + "w" + ")" * 1000 + "\n",
        "x = " + "[" * 300 + "]" * 300 + "\n",
        "x = " + " + ".join(["w"] * 2000) + "\n",
    ],
    ids=["1000-deep-parentheses", "300-deep-lists", "2000-term-sum"],
)
def test_deep_nesting_never_escapes(tree: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    (tree / "deep.py").write_text(CLEAN_HEADER + body)
    code, lines, _ = check(capsys)
    assert code == 1
    assert_others_checked(lines)
    # Either analysed, or one clear line saying it is too deep: never a crash.
    assert all(line.startswith("deep.py: error: too deeply nested") for line in error_lines(lines))


def test_deeply_nested_blocks(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nested = "".join(" " * i + f"if w{i}:\n" for i in range(120)) + " " * 120 + "pass\n"
    (tree / "blocks.py").write_text(CLEAN_HEADER + nested)
    code, lines, _ = check(capsys)
    assert code == 1
    [tl900] = [line for line in lines if "TL900" in line]
    assert tl900.startswith("blocks.py:") and "indentation" in tl900
    assert_others_checked(lines)


def test_deep_nesting_in_a_subprocess_does_not_kill_the_process(tree: Path) -> None:
    # 5000 nested brackets overflow an 8 MB native stack inside libcst: the
    # lint thread's big stack must hold it (a crash here is a signal, not an exit code).
    (tree / "deep.py").write_text(CLEAN_HEADER + "x = " + "(" * 5000 + "w" + ")" * 5000 + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "deep.py", "hazard.py", "--jobs", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert "hazard.py:5:1: TL004" in done.stdout


def boom(*args: object, **kwargs: object) -> object:
    raise ValueError("analysis bug\nwith a second line")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_internal_error_in_one_file(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    (tree / "crash.py").write_text(CLEAN_HEADER)
    real = tapelint.runner._linter()

    def lint_or_crash(source: str, path: str, settings: object, **kwargs: object) -> object:
        return boom() if path == "crash.py" else real(source, path, settings, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tapelint.runner, "_linter", lambda: lint_or_crash)
    code, lines, _ = check(capsys, "--jobs", jobs)
    assert code == 2
    assert error_lines(lines) == [
        "crash.py: error: internal error: ValueError: analysis bug (run with --show-traceback to see the traceback)"]
    assert_others_checked(lines)


def test_memory_error_in_one_file(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "huge.py").write_text(CLEAN_HEADER)
    real = tapelint.runner._linter()

    def lint_or_oom(source: str, path: str, settings: object, **kwargs: object) -> object:
        if path == "huge.py":
            raise MemoryError
        return real(source, path, settings, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tapelint.runner, "_linter", lambda: lint_or_oom)
    code, lines, _ = check(capsys, "--jobs", "1")
    assert code == 1
    assert error_lines(lines) == [
        "huge.py: error: needed more than 4096 MB, the per-file memory budget"
        " (config `file-memory-mb`, flag `--file-memory-mb`); not checked"
    ]
    assert_others_checked(lines)


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="workers inherit the patch only when forked")
def test_a_worker_that_dies_is_one_internal_error(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(6):
        (tree / f"more{i}.py").write_text(CLEAN_HEADER)
    (tree / "segv.py").write_text(CLEAN_HEADER)
    real = tapelint.runner._linter()

    def lint_or_die(source: str, path: str, settings: object, **kwargs: object) -> object:
        if path == "segv.py":
            os.kill(os.getpid(), signal.SIGKILL)  # as a native crash would
        return real(source, path, settings, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tapelint.runner, "_linter", lambda: lint_or_die)
    code, lines, _ = check(capsys, "--jobs", "2")
    assert code == 2
    assert error_lines(lines) == ["segv.py: error: internal error: the worker process died while checking this file"]
    assert_others_checked(lines)
    assert lines[-1] == "Found 1 diagnostic in 1 file (8 files checked). 1 file could not be checked."
