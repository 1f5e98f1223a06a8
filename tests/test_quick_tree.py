"""The quick tree (`tapelint.analysis.quick_tree`) is libcst's tree but for
formatting: on every fixture, every fixture project's file and a text
holding every construct it builds, it equals libcst's parse field by field
(`semantic_difference`); the analysis of either finds the same hazards; and
linting with it on and off gives the same result. Corpus projects:
`benchmarks/bench_quick.py`."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from fixture_spec import FIXTURES_DIR, PROFILES
from tapelint import lint
from tapelint.analysis import quick_tree, thin
from tapelint.analysis.driver import analyze_module
from tapelint.analysis.parsing import parse_module, python_tree
from tapelint.analysis.project import CACHE, QUICK_CACHE
from tapelint.analysis.quick_tree import Unsupported, quick_module, semantic_difference
from tapelint.diagnostics import Semantics
from tapelint.settings import Settings
from tapelint.suppressions import lint_module

FILES = sorted(FIXTURES_DIR.glob("*.py")) + sorted((FIXTURES_DIR / "projects").rglob("*.py"))

# Every construct the quick tree builds, in the forms libcst tells apart.
EVERY_CONSTRUCT = '''\
"""Docstring."""  # é before a literal: ast counts UTF-8 bytes
from __future__ import annotations
import os, os.path as osp
import torch.nn.functional
from . import sibling
from ..pkg.mod import (a as b, c)
from .mod import *
x = 1; y = 2.5; z = 3j; w = 0x1F; big = 1_000
s = "é" + 'two' + b"bytes" + r"raw\\d" + u"uni"
joined = ("first "  # a comment between the parts
          "second" 'third')
f1 = f"{x!r:>{y}} and {z=} {{braces}}"
f2 = "plain " f"{x}" " tail"
nested = f"{f'{x}'}"
if x:
    pass
elif y:
    pass
else:
    if z:
        pass
if x: y = 1; z = 2
while x > 0 and y or not z:
    x -= 1
    if x in (1, 2) or x not in [3] or x is None or x is not y or 1 < x <= 2:
        break
    continue
else:
    pass
for i, (j, *k) in enumerate(range(3)):
    pass
else:
    pass
try:
    pass
except (ValueError, TypeError) as error:
    raise RuntimeError("x") from error
except Exception:
    raise
else:
    pass
finally:
    pass
try:
    pass
except* ValueError:
    pass
with open("a") as fa, open("b"):
    pass
del x, y
del z
def f(p, /, q, r=1, *args, s, t=2, **kwargs) -> int:
    global big
    return p
def g(*, only): ...
async def h(items):
    async for item in items:
        await item
    async with items as entered:
        pass
    return [i async for i in items]
def gen():
    yield
    yield 1
    yield from gen()
    def inner():
        nonlocal_value = 1
        def innermost():
            nonlocal nonlocal_value
    return inner
@decorator
@decorator.attr(arg=1)
class C(Base, metaclass=Meta, **extra):
    attr: int
    other: int = 2
    def method(self):
        return self.attr
lam = lambda a, b=1, *c, d, **e: a
values = [1, *rest], (1,), (), {1, 2}, {"a": 1, **more}, {}
comps = [i for i in x if i if not i], {i for i in x}, (i for i in x for j in i), {k: v for k, v in x.items()}
sub = x[1], x[1:2], x[::2], x[a, b], x[(a, b)], x[(a), b], x[(6 * i + j), :], x[...], x[:, None], x[()]
calls = f(1, *a, k=2, **kw), f(x=1, *rest), f(*a, *b), print(*args, sep="")
ops = -x, +x, ~x, x ** 2 @ y // 3 % 4 << 1 >> 2 | 3 & 4 ^ 5
x += 1; x -= 1; x *= 1; x /= 1; x //= 1; x %= 1; x **= 1; x @= 1; x <<= 1; x >>= 1; x |= 1; x &= 1; x ^= 1
cond = a if b else c
if (n := len(x)) > 1:
    pass
assert x, "message"
assert y
a = b = c
nothing = None, True, False, ...
'''


def test_every_construct_builds_as_libcst_parses_it():
    assert semantic_difference(quick_module(EVERY_CONSTRUCT), parse_module(EVERY_CONSTRUCT)) is None


@pytest.mark.parametrize("text", [
    "x = '''it's ''quoted'' \\''' and'''\n",
    'x = """a\\""""\n',
    "x = ''''a'''\n",
    "x = ''''''\n",
    "x = '''one''' '''two'''\n",
    'x = """one""" \'\'\'two\'\'\' "three"\n',
    "x = ('a\\'b' \"c\\\\\" r'd'\n     'e\\\n')\n",
    "x = f'''{y}''' '''plain'''\n",
])
def test_string_literals_build_as_libcst_parses_them(text: str):
    """Quotes and escapes inside a literal and at its end, and implicit
    concatenations: each literal is its own `SimpleString`, as libcst's."""
    assert semantic_difference(quick_module(text), parse_module(text)) is None


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES_DIR)))
def test_every_fixture_builds_as_libcst_parses_it(path: Path):
    text = path.read_text(encoding="utf-8")
    assert semantic_difference(quick_module(text), parse_module(text)) is None


def test_a_thin_tree_builds_as_libcst_parses_the_thin_text(monkeypatch):
    """Without what the thin parse leaves out (`thin.left_out`), the quick
    tree is libcst's parse of the thin text, on every fixture it thins."""
    monkeypatch.setattr(thin, "MIN_CHARS", 0)
    thinned = 0
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        thin_text = thin.thin_source(text, Settings())
        tree = python_tree(text)
        left_out = thin.left_out(text, tree, Settings())
        assert (not left_out) == (thin_text is None), path
        if thin_text is None:
            continue
        thinned += 1
        assert semantic_difference(quick_module(text, tree, left_out), parse_module(thin_text)) is None, path
    assert thinned >= 20  # the comparison bites


@pytest.mark.parametrize("text, where", [
    ("x = (1, 2)[0]\n", None),
    ("x = f(a)[b]\n", None),
    ("x = f(a, b)\n", "args"),
    ("x = y[1, 2]\n", "slice"),
    ("if a:\n    pass\nelse:\n    if b:\n        pass\n", "orelse"),
    ("x = 'a' 'b'\n", "value"),
    ("def f(a, *, b): pass\n", "params"),
])
def test_the_comparison_sees_every_semantic_difference(text: str, where):
    """Each pair differs in one semantic detail (but the first two, which
    are the same tree): the comparison names the field."""
    other = {
        "x = (1, 2)[0]\n": "x = ( 1,2 ) [0]  # formatting only\n",
        "x = f(a)[b]\n": "x = f( a )[ b ]\n",
        "x = f(a, b)\n": "x = f(a, c)\n",
        "x = y[1, 2]\n": "x = y[(1, 2)]\n",
        "if a:\n    pass\nelse:\n    if b:\n        pass\n": "if a:\n    pass\nelif b:\n    pass\n",
        "x = 'a' 'b'\n": "x = 'ab'\n",
        "def f(a, *, b): pass\n": "def f(a, b): pass\n",
    }[text]
    found = semantic_difference(quick_module(text), parse_module(other))
    if where is None:
        assert found is None
    else:
        assert found is not None and where in found


def _parses(text: str) -> bool:
    try:
        compile(text, "<test>", "exec")
    except SyntaxError:
        return False
    return True


# What this Python parses of the syntax the quick tree does not build.
NOT_BUILT = [text for text in (
    "match x:\n    case 1:\n        pass\n",
    "def f[T](x: T) -> T:\n    return x\n",
    "class Box[T]:\n    pass\n",
    "type Alias = int\n",
) if _parses(text)]


@pytest.mark.parametrize("text", NOT_BUILT)
def test_syntax_it_does_not_build_is_refused(text: str):
    with pytest.raises(Unsupported):
        quick_module(text)


def test_a_file_it_does_not_build_is_linted_from_libcst(tmp_path: Path):
    """A hazard in a file holding a `match` is found: the whole lint parses it."""
    source = (FIXTURES_DIR / "tl001_hoisted_features.py").read_text(encoding="utf-8")
    source += "\n\ndef classify(x):\n    match x:\n        case 1:\n            return 'one'\n"
    path = tmp_path / "with_match.py"
    path.write_text(source, encoding="utf-8")
    assert not lint._quick_finds_nothing(source, str(path), Settings())
    codes = [d.code for d in lint.lint_source(source, str(path), Settings()).diagnostics]
    assert "TL001" in codes


def _clear() -> None:
    for cache in (CACHE, QUICK_CACHE):
        cache.entries.clear()
        cache.chars = 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES_DIR)))
def test_the_analysis_finds_the_same_hazards_in_both_trees(path: Path):
    text = path.read_text(encoding="utf-8")
    settings = Settings()
    _clear()
    real = [type(item.hazard).__name__ for item in analyze_module(parse_module(text), settings, path=str(path))]
    _clear()
    quick = [type(item.hazard).__name__ for item in analyze_module(quick_module(text), settings, path=str(path),
                                                                   cache=QUICK_CACHE)]
    assert sorted(quick) == sorted(real)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_fixture_lints_the_same_with_quick_trees_and_without(profile, monkeypatch):
    settings = Settings(semantics=Semantics(profile), report_unused_suppressions=True)

    def lint_all() -> dict[Path, str]:
        found = {}
        for path in FILES:
            _clear()  # no tree from another lint: each file is parsed as if first
            found[path] = repr(lint_module(path.read_text(encoding="utf-8"), str(path), settings))
        return found

    monkeypatch.setattr(quick_tree, "ENABLED", False)
    without = lint_all()
    monkeypatch.setattr(quick_tree, "ENABLED", True)
    decided = 0
    for path in FILES:
        _clear()
        decided += lint._quick_finds_nothing(path.read_text(encoding="utf-8"), str(path), settings)
    assert lint_all() == without
    assert decided >= 100  # the comparison bites: that many files were cleared by a quick analysis


def test_an_imported_module_is_read_from_the_quick_cache(tmp_path: Path):
    """A quick analysis reads the modules it imports as quick trees, kept
    apart from libcst's (a hazard's related locations need libcst's)."""
    (tmp_path / "models.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n", encoding="utf-8")
    train = tmp_path / "train.py"
    train.write_text("from models import Net\n\nnet = Net()\n", encoding="utf-8")
    _clear()
    settings = Settings(project_root=str(tmp_path))
    assert lint._quick_finds_nothing(train.read_text(encoding="utf-8"), str(train), settings)
    models = str((tmp_path / "models.py").resolve())
    assert models in QUICK_CACHE.entries and models not in CACHE.entries
    assert type(QUICK_CACHE.entries[models].module) is cst.Module


def test_an_imported_module_it_does_not_build_is_read_from_libcst(tmp_path: Path):
    """A module holding a `match` is still known to a quick analysis: libcst
    parses it (unknown, it could hide what the whole lint would find)."""
    module = tmp_path / "models.py"
    module.write_text("def pick(x):\n    match x:\n        case _:\n            return x\n", encoding="utf-8")
    _clear()
    found = QUICK_CACHE.module(str(module))
    assert found is not None and type(found.body[0]) is cst.FunctionDef
    assert type(found.body[0].body.body[0]) is cst.Match
