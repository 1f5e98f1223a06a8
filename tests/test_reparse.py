"""`analysis.reparse` gives exactly the tree of a whole parse, or nothing.

Every edit below is applied to a module's text; when `reparse` answers, its
tree must `deep_equals` libcst's whole parse of the new text (the module's
fields included: header, footer, default indent and line break) and its
layout must be the new tree's; when the whole parse fails, `reparse` must
not answer. Edits: hand-picked borders (a comment after a block, which the
block owns; the first indented block, which sets the module's indent; CRLF
files; the last statement and the footer) and, on every fixture, edits at
seeded random places (a character typed or deleted, a line inserted,
removed, indented or duplicated, a comment at either indentation).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import libcst as cst
import pytest

from tapelint.analysis import reparse as reparsing
from tapelint.analysis.project import ModuleCache
from tapelint.analysis.reparse import Layout, reparse

FIXTURES = sorted((Path(__file__).parent.parent / "fixtures").rglob("*.py"))

BASE = """\
import torch
# about f

def f(x):
    y = x * 2
    # the end of f
    return y


  # an indented comment, owned by f's block or by g


def g(x):
  return x + 1

class Net(torch.nn.Module):
    def forward(self, x):
        return f(x)

for step in range(3):
    loss = Net()(torch.ones(1)).sum()
    loss.backward()
# trailing comment
"""


@pytest.fixture
def any_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reparse however much of a (small) fixture an edit touches: what is
    tested is the result, not when a whole parse would cost as much."""
    monkeypatch.setattr(reparsing, "_MAX_SHARE", 1.0)


def whole(text: str) -> Optional[cst.Module]:
    try:
        return cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any failure: reparse must not answer either
        return None


def check_edit(old_text: str, new_text: str) -> bool:
    """Assert `reparse` agrees with a whole parse; True when it answered."""
    old = cst.parse_module(old_text)
    layout = Layout.of(old, old_text)
    if layout is None:
        return False
    answer = reparse(old_text, old, layout, new_text)
    expected = whole(new_text)
    if answer is None:
        return False
    assert expected is not None, f"reparse answered, the whole parse failed:\n{new_text}"
    module, new_layout = answer
    assert module.deep_equals(expected), f"trees differ after the edit:\n{new_text}"
    assert module.code == new_text
    assert new_layout == Layout.of(expected, new_text)
    return True


EDITS = [
    ("typing in f", lambda t: t.replace("x * 2", "x * 23")),
    ("typing in g", lambda t: t.replace("x + 1", "x + 12")),
    ("typing in the last statement", lambda t: t.replace("range(3)", "range(4)")),
    ("a comment after f's block, at its indentation", lambda t: t.replace("    return y\n", "    return y\n    # more\n")),
    ("a comment after f's block, at column 0", lambda t: t.replace("    return y\n", "    return y\n# more\n")),
    ("the indented comment removed", lambda t: t.replace("  # an indented comment, owned by f's block or by g\n", "")),
    ("g's block indented like the module", lambda t: t.replace("  return x + 1", "    return x + 1")),
    ("f's block reindented (the first block: the module's indent)", lambda t: t.replace("    y = x * 2\n    # the end of f\n    return y", "  y = x * 2\n  # the end of f\n  return y")),
    ("a statement added between two", lambda t: t.replace("class Net", "z = 1\n\nclass Net")),
    ("g deleted", lambda t: t.replace("def g(x):\n  return x + 1\n", "")),
    ("the footer edited", lambda t: t.replace("# trailing comment\n", "# trailing comment, longer\n\n")),
    ("an unclosed bracket", lambda t: t.replace("x + 1", "(x + 1")),
    ("an unterminated string", lambda t: t.replace("x + 1", "'x + 1")),
    ("a triple quote opened in g and closed in Net", lambda t: t.replace("x + 1", "'''x + 1").replace("return f(x)", "return f(x)'''")),
    ("a dedented line in f", lambda t: t.replace("    return y", "return y")),
    ("a line continued into the next statement", lambda t: t.replace("  return x + 1", "  return x + 1 \\")),
    ("the first statement", lambda t: t.replace("import torch", "import torch as t")),
    ("no trailing line break", lambda t: t.rstrip("\n")),
]


# Which hand-picked edits are answered (the rest need a whole parse).
ANSWERED = {"typing in f", "typing in g", "typing in the last statement", "a comment after f's block, at column 0",
            "the indented comment removed", "g's block indented like the module", "a statement added between two",
            "the footer edited", "a triple quote opened in g and closed in Net", "a dedented line in f"}


@pytest.mark.parametrize("name, edit", EDITS, ids=[name for name, _ in EDITS])
def test_hand_picked_edits_agree_with_a_whole_parse(name: str, edit, any_span: None) -> None:
    assert check_edit(BASE, edit(BASE)) == (name in ANSWERED)


def test_crlf_text_agrees_with_a_whole_parse() -> None:
    crlf = BASE.replace("\n", "\r\n")
    assert check_edit(crlf, crlf.replace("x + 1", "x + 12"))


def test_typing_inside_a_function_reuses_every_other_statement() -> None:
    old = cst.parse_module(BASE)
    layout = Layout.of(old, BASE)
    assert layout is not None
    answer = reparse(BASE, old, layout, BASE.replace("x + 1", "x + 12"))
    assert answer is not None
    module, _ = answer
    changed = [i for i, (a, b) in enumerate(zip(old.body, module.body)) if a is not b]
    assert [type(module.body[i]).__name__ for i in changed] == ["FunctionDef"]
    assert module.body[changed[0]].name.value == "g"


def _edits(text: str, rng: random.Random, count: int, start: int = 0) -> list[str]:
    lines = text.splitlines(keepends=True)
    edits = []
    for _ in range(count):
        at = rng.randrange(start, len(lines))
        line = lines[at]
        kind = rng.randrange(7)
        if kind == 0:
            column = rng.randrange(len(line) + 1)
            new = line[:column] + rng.choice("x1 ()#:'") + line[column:]
        elif kind == 1 and line.strip():
            column = rng.randrange(len(line.rstrip("\r\n")) or 1)
            new = line[:column] + line[column + 1:]
        elif kind == 2:
            new = "\n" + line
        elif kind == 3:
            new = ""
        elif kind == 4:
            new = "    " + line
        elif kind == 5:
            new = line + line
        else:
            new = rng.choice(("# note\n", "    # note\n", "  # note\n", "\n\n")) + line
        edits.append("".join(lines[:at]) + new + "".join(lines[at + 1:]))
    return edits


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_random_edits_of_a_fixture_agree_with_a_whole_parse(path: Path, any_span: None) -> None:
    text = path.read_text()
    assert whole(text) is not None, f"{path.name}: the fixture does not parse"
    rng = random.Random(path.name)
    for new in _edits(text, rng, 12):
        check_edit(text, new)


def test_random_edits_are_mostly_answered(any_span: None) -> None:
    """The random edits above are not all declined (which would pass them
    vacuously): of those after the first statement (a fixture's docstring,
    left to a whole parse) that leave the text parsable, most are answered."""
    answered = total = 0
    for path in FIXTURES[::5]:
        text = path.read_text()
        layout = Layout.of(cst.parse_module(text), text)
        assert layout is not None
        first_statement_lines = text[:layout.starts[1]].count("\n")
        if first_statement_lines >= text.count("\n"):
            continue  # one statement (or one and comments): nothing after it
        for new in _edits(text, random.Random(path.name), 12, start=first_statement_lines):
            if whole(new) is not None:
                total += 1
                answered += check_edit(text, new)
    assert total > 300
    assert answered / total > 0.7, f"{answered}/{total}"


def test_most_edits_of_the_fixtures_are_reparsed(any_span: None) -> None:
    """Not a correctness claim: the point is to save the parse, so most
    in-function edits must be answered (they are in the editor's case)."""
    answered = total = 0
    for path in FIXTURES[:60]:
        text = path.read_text()
        lines = text.splitlines(keepends=True)
        for at, line in enumerate(lines):
            if line.startswith("        ") and line.strip():  # inside a def's or method's body
                new = "".join(lines[:at]) + line.rstrip("\r\n") + "  # typed\n" + "".join(lines[at + 1:])
                total += 1
                answered += check_edit(text, new)
    assert total > 100
    assert answered / total > 0.95, f"{answered}/{total}"


def test_the_parse_cache_reparses_an_edited_text_of_the_same_path(tmp_path: Path) -> None:
    cache = ModuleCache()
    path = str(tmp_path / "train.py")
    first = cache.tree(path, BASE)
    edited = BASE.replace("x + 1", "x + 12")
    second = cache.tree(path, edited)
    assert second.deep_equals(cst.parse_module(edited))
    assert second.body[0] is first.body[0]  # the untouched import kept its node
    assert cache.holds(path, edited) and not cache.holds(path, BASE)


def _typable_lines(text: str) -> list[int]:
    """Indented lines where a trailing comment can be typed."""
    return [i for i, line in enumerate(text.splitlines(keepends=True)) if line.startswith("    ") and line.strip()
            and not line.rstrip().endswith(("\\", ",", "(", "[", "{"))]


# The positive fixtures with a body to type in (script-style ones have none).
POSITIVES = [p for p in FIXTURES
             if p.name.startswith("tl0") and p.parent.name == "fixtures" and _typable_lines(p.read_text())]


@pytest.mark.parametrize("path", POSITIVES, ids=[p.name for p in POSITIVES])
def test_an_edited_document_lints_as_a_fresh_one(path: Path, tmp_path: Path) -> None:
    """The editor's case end to end: a keystroke in a file linted before (its
    tree then reparsed from the earlier one, and no thin pass) gives exactly
    the diagnostics and fixes a process that never saw the earlier text gives."""
    from tapelint.analysis.project import CACHE
    from tapelint.document import lint_document
    from tapelint.settings import Settings

    text = path.read_text()
    lines = text.splitlines(keepends=True)
    body = _typable_lines(text)
    at = body[len(body) // 2]
    edited = "".join(lines[:at]) + lines[at].rstrip("\r\n") + "  # typed\n" + "".join(lines[at + 1:])
    target = tmp_path / path.name
    settings = Settings(project_root=str(tmp_path))
    CACHE.entries.clear()
    lint_document(text, str(target), settings)
    after_edit = lint_document(edited, str(target), settings)
    CACHE.entries.clear()
    fresh = lint_document(edited, str(target), settings)
    CACHE.entries.clear()
    assert [d.to_json() for d in after_edit.diagnostics] == [d.to_json() for d in fresh.diagnostics]


def test_a_tree_laid_out_ahead_is_not_laid_out_again_at_the_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """The language server's lint process lays out the document's tree after
    replying (a code generation of the module); the next edit reuses it."""
    cache = ModuleCache()
    path = str(tmp_path / "train.py")
    cache.tree(path, BASE)
    cache.prepare_reparse(path)

    def no_layout(*args: object) -> None:
        raise AssertionError("laid out again at the edit")

    monkeypatch.setattr(Layout, "of", staticmethod(no_layout))
    edited = BASE.replace("x + 1", "x + 12")
    assert cache.tree(path, edited).deep_equals(cst.parse_module(edited))
    edited_again = edited.replace("x * 2", "x * 3")
    assert cache.tree(path, edited_again).deep_equals(cst.parse_module(edited_again))
