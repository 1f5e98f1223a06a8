"""`target-version`: a file written for a newer Python than the one tapelint
runs on is judged by libcst's parser where this Python's parser refuses it,
so it is linted instead of being TL900; the default is the lower bound of
the project's `requires-python`, else this Python; what no Python accepts
stays CPython's verdict; the cache keys on it."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import libcst as cst
import pytest
from test_cli import run

from tapelint.config import Overrides, Resolver, requires_python_lower_bound
from tapelint.lint import lint_source
from tapelint.settings import RUNNING, TARGET_VERSIONS, PythonVersion, Settings

# Syntax a newer Python added, by the version that added it (libcst parses
# both). Each defines `pair`, which the program below calls in its loop.
NEWER_SYNTAX = [
    (PythonVersion(3, 12), "type Pair[T] = tuple[T, T]\n\n\ndef pair[T](item: T) -> Pair[T]:\n    return item, item\n"),
    (PythonVersion(3, 14), "def pair(item):\n    print(t'{item}')\n    return item, item\n"),
]
NEWER, SYNTAX = next(((v, code) for v, code in NEWER_SYNTAX if v > RUNNING), (None, ""))
needs_newer = pytest.mark.skipif(NEWER is None, reason="no syntax newer than this Python in the table")
# A program for the newer Python: a tracked tensor computed once, before the
# loop whose first backward frees it (TL001), reaching the backward through `pair`.
PROGRAM = (
    f"import torch\n\n{SYNTAX}\n\n"
    "w = torch.ones(3, requires_grad=True)\n"
    "feats = w.exp()  # computed once, outside the loop\n"
    "for step in range(3):\n"
    "    first, second = pair(feats)\n"
    "    loss = (first * second).sum()\n"
    "    loss.backward()\n"
)
FEATS_LINE = PROGRAM.splitlines().index("feats = w.exp()  # computed once, outside the loop") + 1
SYNTAX_LINE = 3  # the first line of SYNTAX, where this Python's parser gives up
# A program with no hazard marker (the pre-check would skip it) whose only error is at its end.
BROKEN = f"{SYNTAX}\n\ndef f(:\n    pass\n"


def check(capsys, *argv: str) -> tuple[int, list[tuple[str, str, int]], str]:
    code, out, err = run(capsys, "check", "--format", "json", "-j", "1", *argv)
    found = json.loads(out)["diagnostics"] if out.strip() else []
    return code, [(Path(d["path"]).as_posix(), d["code"], d["range"]["start"]["line"]) for d in found], err


def pyproject(directory: Path, body: str) -> None:
    (directory / "pyproject.toml").write_text(f"[project]\nname = 'x'\n{body}\n")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- the default: requires-python ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (">=3.12", (3, 12)),
        ("~=3.12", (3, 12)),
        ("~=3.12.1", (3, 12)),
        (">=3.12,<4", (3, 12)),
        ("<4, >= 3.12", (3, 12)),
        (">=3.12.0rc1", (3, 12)),
        ("==3.12.*", (3, 12)),
        ("==3.12", (3, 12)),
        (">3.11", (3, 11)),  # 3.11.1 satisfies it
        (">=3.9, !=3.9.1", (3, 9)),
        (">=3.9,>=3.11", (3, 11)),  # the highest bound is the one that holds
        (">=3", (3, 0)),
        ("<3.13", None),  # no lower bound
        ("!=3.10.*", None),
        ("3.12", None),  # not a PEP 440 specifier
        ("^3.12", None),  # Poetry's, not PEP 440
        (">=3.12 || >=4", None),
        (">=three", None),
        (">=3.12, junk", None),  # one clause that is no specifier spoils the set
        ("", None),
    ],
)
def test_requires_python_lower_bound(text: str, expected: tuple[int, int] | None) -> None:
    assert requires_python_lower_bound(text) == (PythonVersion(*expected) if expected else None)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, RUNNING),
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.13'\n"}, PythonVersion(3, 13)),
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.13'\n[tool.tapelint]\n"}, PythonVersion(3, 13)),
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.13'\n[tool.tapelint]\ntarget-version = 'py310'\n"},
         PythonVersion(3, 10)),
        ({"pyproject.toml": "[project]\nrequires-python = 3.13\n"}, RUNNING),  # not a string: ignored
        ({"pyproject.toml": "[project]\nrequires-python = '^3.13'\n"}, RUNNING),
        # The configuration's own pyproject.toml, not a nearer one without [tool.tapelint] ...
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.10'\n[tool.tapelint]\n",
          "sub/pyproject.toml": "[project]\nrequires-python = '>=3.13'\n"}, PythonVersion(3, 10)),
        # ... but with no configuration, the nearest pyproject.toml, whatever it holds.
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.10'\n",
          "sub/pyproject.toml": "[project]\nrequires-python = '>=3.13'\n"}, PythonVersion(3, 13)),
        ({"pyproject.toml": "[project]\nrequires-python = '>=3.10'\n", "sub/pyproject.toml": "[project]\n"}, RUNNING),
    ],
    ids=["nothing", "requires-python", "with-a-table", "key-wins", "a-number", "poetry-caret",
         "the-configurations", "nearest-without-configuration", "nearest-has-none"],
)
def test_default_target_version(tmp_path: Path, files: dict[str, str], expected: PythonVersion) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    path = str(tmp_path / "sub" / "train.py")
    assert Resolver().settings_for(path).target_version == expected
    assert Resolver(isolated=True).settings_for(path).target_version == RUNNING
    flag = PythonVersion(3, 9)
    assert Resolver(Overrides(target_version=flag)).settings_for(path).target_version == flag


def test_the_accepted_values_are_grammars_libcst_knows() -> None:
    assert [str(v) for v in TARGET_VERSIONS] == ["py38", "py39", "py310", "py311", "py312", "py313", "py314"]
    for version in TARGET_VERSIONS:
        cst.PartialParserConfig(python_version=version.dotted)  # raises ValueError for a version libcst lacks


# --- the command line ----------------------------------------------------------------


@needs_newer
def test_a_project_requiring_a_newer_python_is_linted(project: Path, capsys) -> None:
    pyproject(project, f"requires-python = '>={NEWER.dotted}'")
    code, found, _ = check(capsys)
    assert (code, found) == (1, [("train.py", "TL001", FEATS_LINE)])
    code, found, _ = check(capsys, "--semantics", "strict")
    assert (code, found) == (1, [("train.py", "TL001", FEATS_LINE)])


@needs_newer
def test_without_requires_python_this_python_judges(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--format", "json", "-j", "1")
    [diagnostic] = json.loads(out)["diagnostics"]
    assert (code, diagnostic["code"], diagnostic["range"]["start"]["line"]) == (1, "TL900", SYNTAX_LINE)
    with pytest.raises(SyntaxError) as refused:
        compile(PROGRAM, "train.py", "exec")
    assert diagnostic["message"] == f"syntax error: {refused.value.msg}"  # CPython's own words


@needs_newer
def test_the_flag_and_the_key_override_requires_python(project: Path, capsys) -> None:
    running, newer = str(RUNNING), str(NEWER)
    assert check(capsys, "--target-version", newer)[1] == [("train.py", "TL001", FEATS_LINE)]
    pyproject(project, f"requires-python = '>={NEWER.dotted}'")
    assert check(capsys, "--target-version", running)[1] == [("train.py", "TL900", SYNTAX_LINE)]
    pyproject(project, f"requires-python = '>={NEWER.dotted}'\n\n[tool.tapelint]\ntarget-version = '{running}'")
    assert check(capsys)[1] == [("train.py", "TL900", SYNTAX_LINE)]
    assert check(capsys, "--target-version", newer)[1] == [("train.py", "TL001", FEATS_LINE)]  # the flag wins


@needs_newer
def test_show_settings_says_where_the_target_version_comes_from(project: Path, capsys) -> None:
    def shown(*argv: str) -> str:
        code, out, _ = run(capsys, "check", "--show-settings", *argv)
        assert code == 0
        return next(line for line in out.splitlines() if line.startswith("target-version")).split(None, 1)[1]

    running = f"this Python {RUNNING.dotted}"
    assert shown() == f"{RUNNING} (the running Python; {running} judges syntax)"
    pyproject(project, f"requires-python = '>={NEWER.dotted},<4'")
    assert shown() == (f"{NEWER} (requires-python '>={NEWER.dotted},<4' in pyproject.toml; newer than {running}:"
                       " libcst's parser judges the syntax it refuses)")
    assert shown("--target-version", str(RUNNING)).startswith(f"{RUNNING} (--target-version; {running} judges")
    pyproject(project, "requires-python = 'any'")
    assert shown() == (f"{RUNNING} (the running Python; requires-python 'any' in pyproject.toml gives no lower"
                       f" bound; {running} judges syntax)")


@pytest.mark.parametrize(
    ("argv", "config", "expected"),
    [
        (("--target-version", "py399"), None, "--target-version 'py399': expected one of py38, py39, py310, py311,"
                                               " py312, py313, py314"),
        (("--target-version", "3.12"), None, "--target-version '3.12': expected one of py38,"),
        ((), "target-version = 'py3.12'", "pyproject.toml: [tool.tapelint] target-version: expected one of 'py38',"
                                          " 'py39', 'py310', 'py311', 'py312', 'py313', 'py314', got a string"),
        ((), "target-version = 312", "target-version: expected one of 'py38', "),
    ],
    ids=["flag-unknown", "flag-dotted", "key-dotted", "key-number"],
)
def test_an_invalid_target_version_is_one_line_exit_2(project: Path, capsys, argv: tuple[str, ...],
                                                      config: str | None, expected: str) -> None:
    if config is not None:
        pyproject(project, f"[tool.tapelint]\n{config}")
    code, out, err = run(capsys, "check", *argv)
    assert code == 2 and out == ""
    assert err.startswith("tapelint: error: ") and err.count("\n") == 1 and expected in err


@needs_newer
def test_changing_the_target_version_invalidates_a_cached_result(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("TAPELINT_NO_CACHE")
    monkeypatch.delenv("TAPELINT_CACHE_DIR", raising=False)
    assert check(capsys)[1] == [("train.py", "TL900", SYNTAX_LINE)]
    assert list((project / ".tapelint_cache").glob("*/*.json"))  # the TL900 result is stored
    assert check(capsys, "--target-version", str(NEWER))[1] == [("train.py", "TL001", FEATS_LINE)]
    assert check(capsys)[1] == [("train.py", "TL900", SYNTAX_LINE)]


# --- lint_source: who judges ----------------------------------------------------------


NEWER_SETTINGS = Settings(target_version=NEWER or RUNNING)


@needs_newer
@pytest.mark.parametrize("precheck", [True, False])
def test_what_libcst_refuses_is_tl900_with_its_error(precheck: bool) -> None:
    result = lint_source(BROKEN, "x.py", NEWER_SETTINGS, precheck=precheck)
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "TL900" and diagnostic.range.start.line > len(SYNTAX.splitlines())
    assert diagnostic.message.startswith("syntax error: ")
    assert diagnostic.message.endswith(f"(libcst's parser: target-version {NEWER} is newer than the running Python"
                                       f" {RUNNING.dotted})")
    assert lint_source(BROKEN, "x.py", Settings(target_version=NEWER, ignore=frozenset({"TL900"}))).diagnostics == ()


@needs_newer
def test_a_newer_file_without_a_hazard_marker_is_skipped_once_libcst_parses_it() -> None:
    source = f"{SYNTAX}\nprint(pair(1))\n"
    assert lint_source(source, "x.py", NEWER_SETTINGS).skipped
    unskipped = lint_source(source, "x.py", NEWER_SETTINGS, precheck=False)
    assert not unskipped.skipped and unskipped.diagnostics == () and unskipped.errors == ()


@needs_newer
def test_the_memory_budget_holds_for_a_file_libcst_judges() -> None:
    source = PROGRAM + "x = 1\n" * 20_000
    [error] = lint_source(source, "big.py", Settings(target_version=NEWER, file_memory_mb=1)).errors
    assert error.message.startswith("too large to check within the per-file memory budget (1 MB")


HAZARD = "import torch\nw = torch.ones(3, requires_grad=True)\nw.sum().backward()\n"


def _nul_is_a_syntax_error() -> bool:
    try:
        compile("x = '\0'\n", "x.py", "exec")
    except SyntaxError:
        return True  # Python 3.12, and 3.11 since a patch release
    except ValueError:
        return False
    return False


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [
        (HAZARD + "return 1\n", 4, "syntax error: 'return' outside function"),
        (HAZARD + "print(a=1, a=2)\n", 4, "syntax error: keyword argument repeated"),
        (HAZARD + "for i in []:\n    pass\nbreak\n", 6, "syntax error: 'break' outside loop"),
        # The tokenizer's limits hold past an earlier syntax error (it reads the whole file) ...
        (f"{SYNTAX}\nx = {'(' * 2000}w{')' * 2000}\n", len(SYNTAX.splitlines()) + 2,
         "syntax error: too many nested parentheses"),
        # ... and so does its refusal of a NUL byte, which libcst would take inside a string.
        pytest.param(f"{SYNTAX}\nx = '\0'\n", 1, "syntax error: source code string cannot contain null bytes",
                     marks=pytest.mark.skipif(not _nul_is_a_syntax_error(), reason="this Python reads NUL as ValueError")),
    ],
    ids=["return-outside-function", "repeated-keyword", "break-outside-loop", "2000-nested-parentheses", "nul-byte"],
)
def test_what_no_newer_python_accepts_stays_cpythons_verdict(source: str, line: int, message: str) -> None:
    target = Settings(target_version=max(TARGET_VERSIONS))
    for settings in (Settings(), target):
        [diagnostic] = lint_source(source, "x.py", settings).diagnostics
        assert (diagnostic.code, diagnostic.range.start.line) == ("TL900", line)
        assert diagnostic.message.startswith(message)


@pytest.mark.parametrize(
    "body",
    ["x = " + "-" * 100000 + "w\nx.sum().backward()\n", "x = w.sum()" + " + w.sum()" * 4000 + "\nx.backward()\n"],
    ids=["minus-100000", "sum-4000"],
)
def test_nesting_too_deep_for_cpython_is_refused_quickly_whatever_the_target(body: str) -> None:
    start = time.process_time()
    [diagnostic] = lint_source(HAZARD + body, "x.py", Settings(target_version=max(TARGET_VERSIONS))).diagnostics
    assert time.process_time() - start < 5
    assert diagnostic.code == "TL900" and "CPython cannot compile this file" in diagnostic.message


# --- real code ------------------------------------------------------------------------


def test_the_installed_torch_test_written_for_python_312() -> None:
    torch = pytest.importorskip("torch")
    path = os.path.join(os.path.dirname(torch.__file__), "testing", "_internal", "py312_intrinsics.py")
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    assert "def f[T](" in source
    for_312 = lint_source(source, path, Settings(target_version=PythonVersion(3, 12)), precheck=False)
    assert for_312.diagnostics == () and for_312.errors == ()
    if sys.version_info < (3, 12):
        line = next(number for number, text in enumerate(source.splitlines(), 1) if "def f[T](" in text)
        [diagnostic] = lint_source(source, path, Settings()).diagnostics
        assert (diagnostic.code, diagnostic.range.start.line) == ("TL900", line)
