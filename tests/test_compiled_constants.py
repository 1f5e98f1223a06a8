"""The compiled analysis reads node classes from `cst_nodes` and `ast_nodes`.

Under mypyc, `cst.Name` in a compiled function is an attribute lookup on the
`libcst` module at every use, where a `Final` of `analysis/cst_nodes.py` is a
C static: the type tests of every node cost 6% of the analysis' instructions
(`docs/performance.md`). This test keeps a new function from reading
`cst.X` or `ast.X` where the constant serves, and each constant true to its
class.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tapelint.analysis import ast_nodes, cst_nodes
from tapelint.build_backend import compiled_modules

ROOT = Path(__file__).resolve().parents[1]
# Abstract classes (a `type[...]` of one is no constant mypy accepts), and
# `ast`'s classes that not every supported Python has.
_KEPT = frozenset(("CSTNode", "CSTVisitor", "AST", "TryStar"))


def _kept(name: str) -> bool:
    return name in _KEPT or name.startswith(("Base", "Match"))


def _type_positions(tree: ast.Module) -> set[int]:
    """The nodes (by id) where a class is a type to mypy, not a value read:
    annotations, `isinstance`/`issubclass`'s classes (narrowing),
    `cast`'s and `TypeVar`'s first argument, subscripts, base classes."""
    found: set[int] = set()
    for node in ast.walk(tree):
        typed: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            typed.append(node.returns)
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg,
                        arguments.kwarg]:
                typed.append(arg.annotation if arg is not None else None)
        elif isinstance(node, ast.AnnAssign):
            typed.append(node.annotation)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("cast", "TypeVar"):
                typed.append(node.args[0])
            elif node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                typed.append(node.args[1])
        elif isinstance(node, ast.Subscript):
            typed.append(node.slice)
        elif isinstance(node, ast.ClassDef):
            typed.extend(node.bases)
        for part in typed:
            if part is not None:
                found.update(id(inner) for inner in ast.walk(part))
    return found


def _module_reads(path: Path) -> list[str]:
    """`line: cst.X` for each class a function of `path` reads from the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed = _type_positions(tree)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ("cst", "ast") and node.attr[:1].isupper()
                    and id(node) not in typed and not _kept(node.attr)):
                found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return sorted(set(found))


@pytest.mark.parametrize("module", compiled_modules(ROOT))
def test_compiled_functions_read_node_classes_from_the_constants(module):
    assert _module_reads(ROOT / module) == []


def test_a_module_read_is_found(tmp_path):
    """The check itself: a type test on `cst.Name` is found; an annotation,
    an `isinstance` and module-level code are not."""
    path = tmp_path / "m.py"
    path.write_text(
        "import libcst as cst\nTABLE = {cst.Name: 1}\n"
        "def f(x: cst.Name) -> bool:\n    return isinstance(x, cst.Call) or type(x) is cst.Name\n")
    assert _module_reads(path) == ["4: cst.Name"]


@pytest.mark.parametrize("constants,library", [(cst_nodes, "libcst"), (ast_nodes, "ast")])
def test_each_constant_is_its_class(constants, library):
    import importlib

    module = importlib.import_module(library)
    names = list(constants.__annotations__)
    assert len(names) > 15
    assert all(getattr(constants, name) is getattr(module, name) for name in names)
