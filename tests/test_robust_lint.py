"""Issue 10, the lint entry point: whatever CPython refuses to compile is
TL900 (and never reaches libcst, whose parser is super-linear in nesting
depth), and a BOM in text handed to `lint_source` is stripped."""

from __future__ import annotations

import ast
import contextlib
import io
import time

import pytest

from tapelint import lint
from tapelint.cli import main
from tapelint.lint import lint_source
from tapelint.settings import RUNNING, Settings

HEADER = "import torch\nw = torch.ones(3, requires_grad=True)\n"


def codes(source: str, precheck: bool = True) -> list[tuple[str, int]]:
    result = lint_source(source, "x.py", Settings(), precheck=precheck)
    assert result.errors == ()
    return [(d.code, d.range.start.line) for d in result.diagnostics]


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("def f():\n    w.sum().backward()\nreturn 1\n", 5, "'return' outside function"),
        ("print(a=1, a=2)\nw.sum().backward()\n", 3, "keyword argument repeated"),
        ("for i in []:\n    pass\nbreak\nw.sum().backward()\n", 5, "'break' outside loop"),
        ("x = " + "(" * 2000 + "w" + ")" * 2000 + "\nx.sum().backward()\n", 3, "too many nested parentheses"),
    ],
    ids=["return-outside-function", "repeated-keyword", "break-outside-loop", "2000-nested-parentheses"],
)
@pytest.mark.parametrize("precheck", [True, False])
def test_compile_time_errors_are_tl900(body: str, line: int, message: str, precheck: bool) -> None:
    result = lint_source(HEADER + body, "x.py", Settings(), precheck=precheck)
    [diagnostic] = result.diagnostics
    assert (diagnostic.code, diagnostic.range.start.line) == ("TL900", line)
    assert message in diagnostic.message


@pytest.mark.parametrize(
    "body",
    [
        "def f():\n    w.sum().backward()\nreturn 1\n",
        "print(a=1, a=2)\nw.sum().backward()\n",
        "def f(a, a):\n    pass\n",
        "def f():\n    nonlocal w\n",
        "x = " + "(" * 2000 + "w" + ")" * 2000 + "\n",
        "x = " + "-" * 100000 + "w\n",
        "x = 1\0\n",
        "w.sum().backward()\n",
    ],
    ids=["return-outside-function", "repeated-keyword", "duplicate-argument", "nonlocal-at-module-level",
         "2000-nested-parentheses", "minus-100000", "nul-byte", "compiles"],
)
def test_the_tree_is_judged_as_the_text(body: str) -> None:
    # A file the analysis goes on to is parsed once and compiled from its tree:
    # the verdict must be the one CPython gives the text.
    source = HEADER + body
    tree, refusal = lint._python_verdict(source, "x.py", RUNNING, want_tree=True)
    assert refusal == lint._python_refusal(source, "x.py", RUNNING)
    assert (tree is None) == (refusal is not None or "\0" in source)
    if tree is not None:
        assert ast.dump(tree) == ast.dump(ast.parse(source))


def test_a_file_analysed_is_parsed_by_cpython_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = []

    def counted(text: str) -> ast.Module:
        parses.append(text)
        return ast.parse(text)

    def refused(*args: object) -> None:
        raise AssertionError("compiled from its text again")

    monkeypatch.setattr(lint, "python_tree", counted)
    monkeypatch.setattr(lint, "_python_refusal", refused)
    source = HEADER + "for _ in range(3):\n    (w * 2).sum().backward()\n"
    assert codes(source) == []
    assert parses == [source]


@pytest.mark.parametrize(
    "body",
    [
        "f = " + "lambda: " * 5000 + "w\nf().sum().backward()\n",
        "x = " + "not " * 20000 + "w\nw.sum().backward()\n",
        "x = " + "-" * 100000 + "w\nx.sum().backward()\n",
        "x = w.sum()" + " + w.sum()" * 4000 + "\nx.backward()\n",
        "x = w" + ".T" * 20000 + "\nx.sum().backward()\n",
    ],
    ids=["lambda-5000", "not-20000", "minus-100000", "sum-4000", "attribute-20000"],
)
def test_pathological_nesting_is_refused_quickly(body: str) -> None:
    # Each took minutes and gigabytes in libcst's parser; CPython refuses them all.
    start = time.process_time()
    result = lint_source(HEADER + body, "x.py", Settings())
    assert time.process_time() - start < 5
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "TL900" and "CPython cannot compile this file" in diagnostic.message


def test_refusal_respects_an_ignored_tl900() -> None:
    result = lint_source(HEADER + "return 1\n", "x.py", Settings(ignore=frozenset({"TL900"})))
    assert result.diagnostics == () and result.errors == ()


@pytest.mark.parametrize("precheck", [True, False])
def test_bom_is_stripped_on_every_path(precheck: bool) -> None:
    clean = "\ufeffx = 1\n"
    hazard = "\ufeff" + HEADER + "loss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
    assert codes(clean, precheck) == []
    assert codes(hazard, precheck) == [("TL004", 5)]


def test_too_large_for_the_memory_budget_is_one_error() -> None:
    source = HEADER + "w.sum().backward()\n" + "x = 1\n" * 20_000
    result = lint_source(source, "big.py", Settings(file_memory_mb=1))
    [error] = result.errors
    assert error.message.startswith("too large to check within the per-file memory budget (1 MB")
    assert lint_source(source, "big.py", Settings()).errors == ()


def test_a_form_feed_is_no_line_break_for_a_syntax_error(tmp_path) -> None:
    """CPython breaks lines at `\\n`, `\\r\\n` and `\\r` only; `str.splitlines`
    also at a form feed (an editor's page break). TL900's column and the
    snippet the text output shows come from the line CPython means."""
    source = "x = 1  # page\x0cbreak\ny = (\n"
    [diagnostic] = lint_source(source, "x.py", Settings()).diagnostics
    assert (diagnostic.code, diagnostic.range.start.line, diagnostic.range.start.column) == ("TL900", 2, 4)
    path = tmp_path / "page.py"
    path.write_text(source, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--no-cache", str(path)])
    assert f"{path}:2:5: TL900" in out.getvalue() and "2 | y = (" in out.getvalue()
