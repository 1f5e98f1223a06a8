"""Which names a file imports can lead to a backward: the pre-check's second
stage (`precheck.may_hold_hazard_in_tree`), one definition at a time.

The analysis of a file runs another module's code only through a name the
file imports: a function or class that module lends (`Program.definition`:
through imports, star imports, re-exports and aliases), whose body runs
what the names in it stand for, and so on. So a file whose imported names
lead, definition by definition, to none that holds a backward marker runs
no backward in its analysis, even when a module it imports from holds one
in another definition (detectron2's `structures` beside its `engine`).

Each module is read once (`module_graph`, from CPython's tree): for each
of its top-level names, whether its definition's text holds a marker and
which names the definition mentions; its imports; its star imports. The
graph errs on the side of keeping the file wherever it cannot tell:

* a definition mentions every `Name` in it (a local variable spelled like
  a definition counts) but in annotations, which the analysis never
  evaluates; a name bound twice stands for both bindings; a class counts
  whole (a subclass runs all its methods);
* a module or package bound as a name (`import m`, `from pkg import m`) is
  followed through the attribute chains read on it (`m.f`, `pkg.sub.f`);
  passed on as a value, a module may lend any of its definitions, and a
  package (or a star import of one) any submodule's, which keeps the file;
* code run on import (outside any definition) that holds a marker, and a
  text CPython cannot parse (libcst may), keep the file that reaches the
  module;
* more modules in reach of one name than the caller's bound keep the file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Optional, Union

from tapelint.analysis import ast_nodes
from tapelint.analysis.project import is_package
from tapelint.analysis.reported_totals import Totals, blocks_of, child_nodes, dotted_of, statement_blocks, totals_of


@dataclass(frozen=True)
class Import:
    """What one import binds a name to: the module `module` (with `level`
    leading dots), or, with `name`, that module's attribute (or submodule)."""

    level: int
    module: str
    name: Optional[str] = None


Imports = Mapping[str, tuple[Import, ...]]  # bound name -> every import that binds it


@dataclass(frozen=True)
class Definition:
    """One top-level name of a module: whether its text holds a backward
    marker, the names it mentions, and the imports in its body."""

    marks: bool
    uses: frozenset[str]
    imports: Imports


@dataclass(frozen=True)
class ModuleGraph:
    """What the reach of names needs of one module (plain data: cached per
    process by the module's content)."""

    keeps: bool  # code run on import holds a marker, or CPython cannot parse the text
    definitions: Mapping[str, Definition]
    imports: Imports
    stars: tuple[Import, ...]
    totals: Totals  # what its loops accumulate and report (`reported_totals`)


KEEPS: Final = ModuleGraph(True, {}, {}, (), Totals(frozenset(), frozenset()))

# A place in the graph: a module bound as a name ("module", path), one of a
# module's names ("name", path, name), or `KEEP`.
Target = Union[tuple[str, str], tuple[str, str, str]]
KEEP: Final[tuple[str, str]] = ("keep", "")
# The first-party file an import names from a file (`project.find_module`):
# (level, dotted module, importing file) -> path, or None for a library.
Find = Callable[[int, str, str], Optional[str]]


def module_graph(tree: ast.Module, code: str, marks: Callable[[str], bool]) -> ModuleGraph:
    """The graph of the module `tree`, parsed from `code` (its text with
    whole-line comments blanked, lines kept); `marks`: whether a piece of
    code holds a backward marker."""
    # (the lines CPython numbers: `str.splitlines` would also break at a form feed)
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    definitions: dict[str, tuple[bool, set[str], dict[str, list[Import]]]] = {}
    imports: dict[str, list[Import]] = {}
    stars: list[Import] = []
    keeps = False

    def text(first: int, last: int) -> str:
        return "\n".join(lines[first - 1:last])

    def define(name: str, marked: bool, node: ast.AST, own_imports: Imports) -> None:
        marked_before, uses, imported = definitions.setdefault(name, (False, set(), {}))
        uses.update(_names(node))
        for bound, found in own_imports.items():
            imported.setdefault(bound, []).extend(found)
        if marked and not marked_before:
            definitions[name] = (True, uses, imported)

    pending: list[list[ast.stmt]] = [tree.body]
    while pending:
        for stmt in pending.pop():
            kind = type(stmt)
            if kind is ast_nodes.FunctionDef or kind is ast_nodes.AsyncFunctionDef or kind is ast_nodes.ClassDef:
                assert isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
                own = file_imports(stmt)[0]  # (an import in its body binds a name there)
                define(stmt.name, marks(text(first, stmt.end_lineno or stmt.lineno)), stmt, own)
            elif kind is ast_nodes.Import or kind is ast_nodes.ImportFrom:
                _bind(stmt, imports, stars)
            elif kind is ast_nodes.Assign or kind is ast_nodes.AnnAssign or kind is ast_nodes.AugAssign:
                marked = marks(text(stmt.lineno, stmt.end_lineno or stmt.lineno))
                bound = [node.id for target in _targets(stmt) for node in _walk(target)
                         if type(node) is ast_nodes.Name and isinstance(node, ast.Name)]
                for name in bound:
                    define(name, marked, stmt, {})
                keeps = keeps or (marked and not bound)
            else:
                blocks = sorted(blocks_of(stmt), key=lambda block: block[0].lineno)
                if not blocks:
                    keeps = keeps or marks(text(stmt.lineno, stmt.end_lineno or stmt.lineno))
                    continue
                # its header (a test, an iterable, a context manager) runs on import
                keeps = keeps or marks(text(stmt.lineno, blocks[0][0].lineno - 1))
                pending.extend(blocks)
    return ModuleGraph(
        keeps,
        {name: Definition(marked, frozenset(uses), {k: tuple(v) for k, v in imported.items()})
         for name, (marked, uses, imported) in definitions.items()},
        {name: tuple(found) for name, found in imports.items()},
        tuple(stars),
        totals_of(tree),
    )


def file_imports(tree: Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
                 ) -> tuple[Imports, tuple[Import, ...]]:
    """Every name an import anywhere in `tree` (a file, or a definition)
    binds, and its star imports: where the analysis of it can leave it."""
    imports: dict[str, list[Import]] = {}
    stars: list[Import] = []
    for block in statement_blocks(tree):
        for stmt in block:
            _bind(stmt, imports, stars)
    return {name: tuple(found) for name, found in imports.items()}, tuple(stars)


def starts(importer: str, tree: ast.Module, find: Find) -> list[Target]:
    """Where the names the file `importer` (parsed as `tree`) imports lead:
    the places `reach` follows from (a module or package bound as a name,
    through each attribute chain the file reads on it)."""
    imports, stars = file_imports(tree)
    found: list[Optional[Target]] = [_star(star, importer, find) for star in stars]
    chains: Optional[dict[str, set[tuple[str, ...]]]] = None  # the file's uses, read only for a module's name
    for name, bound in imports.items():
        for one in bound:
            target = _locate(one, importer, find)
            if (target is not None and len(target) == 2 and target != KEEP) or (
                    target == KEEP and _names_a_package(one, importer, find)):
                if chains is None:
                    chains = _chains(_names(tree))
                found.extend(_locate(one, importer, find, attributes) for attributes in chains.get(name, ()))
            else:
                found.append(target)
    return list(dict.fromkeys(target for target in found if target is not None))


def reach(start: Target, graph_of: Callable[[str], Optional[ModuleGraph]], find: Find,
          limit: int) -> tuple[bool, list[ModuleGraph]]:
    """Does `start` lead to a definition holding a backward marker (or to
    what keeps the file)? And the graphs of the modules looked into on the
    way (every one in reach, when it does not). `graph_of`: a module's graph
    (None: the analysis never loads it); more than `limit` modules keep the
    file."""
    stack: list[Optional[Target]] = [start]
    graphs: dict[str, Optional[ModuleGraph]] = {}
    seen: set[Target] = set()

    def loaded() -> list[ModuleGraph]:
        return [graph for graph in graphs.values() if graph is not None]

    while stack:
        target = stack.pop()
        if target is None or target in seen:
            continue
        if target == KEEP:
            return True, loaded()
        seen.add(target)
        path = target[1]
        if path in graphs:
            graph = graphs[path]
        else:
            if len(graphs) >= limit:
                return True, loaded()
            graph = graphs[path] = graph_of(path)
        if graph is None:
            continue
        if graph.keeps:
            return True, loaded()
        if len(target) == 2:  # the module as a name: any of its names
            stack.extend(("name", path, name) for name in graph.definitions)
            stack.extend(("name", path, name) for name in graph.imports)
            stack.extend(_star(star, path, find) for star in graph.stars)
            continue
        name = target[2]
        definition = graph.definitions.get(name)
        bound = graph.imports.get(name, ())
        stack.extend(_locate(found, path, find) for found in bound)
        if definition is not None:
            if definition.marks:
                return True, loaded()
            for used in definition.uses:
                stack.extend(_resolve(used, definition, graph, path, find))
        elif not bound:  # perhaps one of its star imports'
            stack.extend(_in_star(star, name, path, find) for star in graph.stars)
    return False, loaded()


def _resolve(used: str, definition: Definition, graph: ModuleGraph, path: str, find: Find) -> list[Optional[Target]]:
    """What `used` (a name, or an attribute chain on one: `pkg.sub.f`),
    mentioned in `definition` of the module at `path`, may stand for."""
    name, *rest = used.split(".")
    attributes = tuple(rest)
    found: list[Optional[Target]] = [_locate(i, path, find, attributes) for i in definition.imports.get(name, ())]
    if name in graph.definitions:
        found.append(("name", path, name))
    found.extend(_locate(i, path, find, attributes) for i in graph.imports.get(name, ()))
    if not found:
        found.extend(_in_star(star, name, path, find) for star in graph.stars)
    return found


def _locate(found: Import, importer: str, find: Find, attributes: tuple[str, ...] = ()) -> Optional[Target]:
    """Where the import `found` in `importer` leads, read through
    `attributes` (`pkg.sub.f` of `import pkg`: `f` of the submodule
    `pkg.sub`); None: not first-party. A package as a value, or one without
    `__init__.py` to read a name in, keeps the file."""
    module = find(found.level, found.module, importer)
    if module is None:
        return None
    dotted = found.module
    parts = ((found.name,) if found.name is not None else ()) + attributes
    while is_package(module):
        if not parts:
            return KEEP
        dotted = f"{dotted}.{parts[0]}" if dotted else parts[0]
        sub = find(found.level, dotted, importer)
        if sub is None:
            return ("name", module, parts[0]) if module.endswith(".py") else KEEP
        module, parts = sub, parts[1:]
    return ("name", module, parts[0]) if parts else ("module", module)


def _names_a_package(found: Import, importer: str, find: Find) -> bool:
    """Is what `found` binds a package (`import pkg`, `from pkg import sub`)?"""
    module = find(found.level, found.module, importer)
    if module is None or not is_package(module):
        return False
    if found.name is None:
        return True
    sub = find(found.level, f"{found.module}.{found.name}" if found.module else found.name, importer)
    return sub is not None and is_package(sub)


def _star(star: Import, importer: str, find: Find) -> Optional[Target]:
    """The module `from <star> import *` in `importer` reads (a package's
    `__all__` may name any submodule: kept)."""
    module = find(star.level, star.module, importer)
    if module is None:
        return None
    return KEEP if is_package(module) else ("module", module)


def _in_star(star: Import, name: str, importer: str, find: Find) -> Optional[Target]:
    """`name` as the star import `star` in `importer` may bind it."""
    module = _star(star, importer, find)
    return ("name", module[1], name) if module is not None and module != KEEP else module


def _chains(uses: set[str]) -> dict[str, set[tuple[str, ...]]]:
    """The attribute chains read on each name (`()` for the name itself)."""
    chains: dict[str, set[tuple[str, ...]]] = {}
    for used in uses:
        name, *rest = used.split(".")
        chains.setdefault(name, set()).add(tuple(rest))
    return chains


def _bind(stmt: ast.stmt, into: dict[str, list[Import]], stars: list[Import]) -> None:
    """Note what the import `stmt` binds (nothing for another statement)."""
    if type(stmt) is ast_nodes.Import and isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:  # `import a.b as c`: the module `a.b`
                into.setdefault(alias.asname, []).append(Import(0, alias.name))
            else:  # `import a.b`: the package `a`
                head = alias.name.partition(".")[0]
                into.setdefault(head, []).append(Import(0, head))
    elif type(stmt) is ast_nodes.ImportFrom and isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if alias.name == "*":
                stars.append(Import(stmt.level, stmt.module or ""))
            else:
                found = Import(stmt.level, stmt.module or "", alias.name)
                into.setdefault(alias.asname or alias.name, []).append(found)


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return [stmt.target]
    return []


def _walk(node: ast.AST) -> list[ast.AST]:
    """`node` and every node under it (compiled: `ast.walk` is a generator)."""
    found: list[ast.AST] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(child_nodes(current))
    return found


def _names(node: ast.AST) -> set[str]:
    """Every name `node` mentions, each read through the attributes it is
    read through (`pkg.sub.f`: `pkg` itself is never looked at alone), but
    for annotations, which the analysis never evaluates."""
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        kind = type(current)
        if kind is ast_nodes.Name and isinstance(current, ast.Name):
            found.add(current.id)
        elif kind is ast_nodes.Attribute and isinstance(current, ast.Attribute):
            dotted = dotted_of(current)
            if dotted is not None:
                found.add(dotted)
            else:
                pending.append(current.value)
        elif kind is ast_nodes.arg:
            continue  # a parameter: its annotation is all it holds, and the analysis never reads one
        elif kind is ast_nodes.FunctionDef or kind is ast_nodes.AsyncFunctionDef or kind is ast_nodes.AnnAssign:
            skipped = getattr(current, "returns" if kind is not ast_nodes.AnnAssign else "annotation", None)
            pending.extend(child for child in child_nodes(current) if child is not skipped)
        else:
            pending.extend(child_nodes(current))
    return found
