"""The module graph of a run: which file a first-party import names, each
imported module parsed at most once per process, and what each module
defines and imports (`ModuleSummary`: plain strings, so a cache across runs
can store it).

An import is first-party when it names a file under a root. Roots, in
order: the importing file's own directory (relative imports count from it),
the configured `src` directories, the project root (where the configuration
was found; else the nearest folder above the file that holds a
`pyproject.toml`, `setup.py`, `setup.cfg` or `.git`, so a run gives the same
findings from any working directory; else the current directory). `torch` is never first-party: it is
the vocabulary (`torch_api`), whatever the roots hold. A name that resolves
to no file, or to a file that cannot be read or parsed, or is too large, is
treated exactly as before project analysis: as a library name.

Resolution is lazy (a module is parsed when the interpreter meets a name
that leads to it) and guarded against cycles: a lookup that comes back to a
(module, name) it is already resolving is unknown.

Each module is parsed at most once per process while its text is unchanged,
whether it is imported or linted (`ModuleCache.tree` shares the linted
file's tree with later importers, and an imported module's with its own
lint). Every file-system fact resolution relies on goes through `reads`, so
a cached result knows which files it depends on.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Optional, Union

import libcst as cst

from tapelint.analysis import cst_nodes, quick_tree, reads
from tapelint.analysis.imports import ImportMap, dotted_name
from tapelint.analysis.parsing import parse_module
from tapelint.analysis.reparse import Layout, reparse
from tapelint.analysis.syntax import walk_statements
from tapelint.files import SourceError, decode_source, read_bytes

if TYPE_CHECKING:
    from tapelint.analysis.program import Program

# Files larger than this are not analysed as imported modules (torch's
# `functional.py` is 230k characters): their parse would cost more than the
# file being linted, for definitions a big library module rarely lends.
MAX_MODULE_CHARS = 60_000
# Other modules one analysis loads at most: a training script reaches a
# dozen (a2c-ppo's main.py: arguments, envs, model, distributions, storage,
# the algorithms and what they import, 11 in all; at 8, `RolloutStorage` was
# past the bound and its buffers unknown); a library file importing dozens
# of its package's modules would pay their parses for definitions it rarely
# calls (torch/_inductor/compile_fx.py: 2.1 s CPU at 8, 2.5 s at 16).
MAX_MODULES_PER_ANALYSIS = 16
# Source characters kept parsed per process. A parsed tree keeps ~56 bytes
# per source character (measured on peft's 20-60k character modules; the
# parse itself peaks far higher, transiently), so this is ~110 MB. Measured
# on peft, in one process: 500k characters re-parsed evicted modules (434
# parses of 293 files), 2M nearly never does (328 parses, 15% less CPU).
MAX_CACHED_CHARS = 2_000_000
VOCABULARY_PACKAGES = frozenset(("torch",))


@dataclass(frozen=True)
class ImportTarget:
    """What an import binds: module `path` itself (`name` None) or its attribute `name`."""

    path: str  # a `.py` file, a package's `__init__.py`, or a namespace package's directory
    name: Optional[str] = None


@dataclass(frozen=True)
class ModuleSummary:
    """What one module defines and imports, as plain data (serialisable)."""

    path: str
    imports: tuple[tuple[str, ImportTarget], ...]  # first-party only: local name -> target
    star_imports: tuple[str, ...]  # paths of `from m import *` modules, in order
    functions: tuple[str, ...]
    classes: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...]  # module level `Name = other.name`
    exported: Optional[tuple[str, ...]]  # a literal `__all__`

    def import_of(self, name: str) -> Optional[ImportTarget]:
        return self._imports.get(name)

    def alias_of(self, name: str) -> Optional[str]:
        return self._aliases.get(name)

    @cached_property
    def _imports(self) -> dict[str, ImportTarget]:
        return dict(self.imports)

    @cached_property
    def _aliases(self) -> dict[str, str]:
        return dict(self.aliases)


@dataclass(frozen=True)
class ParsedModule:
    module: cst.Module
    summary: ModuleSummary


# --------------------------------------------------------------- finding files


def module_file(parts: Sequence[str], root: str) -> Optional[str]:
    """The file (or namespace directory) of dotted module `parts` under `root`."""
    base = os.path.join(root, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if reads.is_file(candidate):
            return candidate
    return base if parts and reads.is_dir(base) else None


def is_package(path: str) -> bool:
    return os.path.basename(path) == "__init__.py" or reads.is_dir(path)


def package_dir(path: str) -> str:
    return path if reads.is_dir(path) else os.path.dirname(path)


def submodule(package: str, name: str) -> Optional[str]:
    """Module `name` inside package `package` (a path from `module_file`)."""
    return module_file((name,), package_dir(package)) if is_package(package) else None


def roots_for(path: str, src: Sequence[str], project_root: str) -> tuple[str, ...]:
    """Where absolute imports of the file at `path` are looked for: its own
    folder, the configured `src` folders, the project root, and, when no `src`
    is configured, the root's `src/` (the src layout, as ruff's default)."""
    own = os.path.dirname(os.path.abspath(path))
    root = project_root or marked_root(own) or os.getcwd()
    roots = [own, *src, root, *(() if src else (os.path.join(root, "src"),))]
    return tuple(dict.fromkeys(os.path.abspath(r) for r in roots))


# What marks a project's top folder when no configuration says where it is.
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def marked_root(directory: str) -> str:
    """The nearest folder at or above `directory` holding a project marker, or ''
    (each look a fact the result relies on: a marker added later moves the root)."""
    while True:
        if any(reads.path_state(os.path.join(directory, marker)) != reads.MISSING for marker in _PROJECT_MARKERS):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return ""
        directory = parent


def find_absolute(dotted: str, roots: Sequence[str]) -> Optional[str]:
    parts = dotted.split(".")
    if not parts[0] or parts[0] in VOCABULARY_PACKAGES:
        return None
    for root in roots:
        found = module_file(parts, root)
        if found is not None:
            return found
    return None


def find_module(level: int, dotted: str, importer: str, roots: Sequence[str]) -> Optional[str]:
    """The first-party module `from <level dots><dotted> import ...` in `importer` names."""
    return find_relative(level, dotted, importer) if level else find_absolute(dotted, roots)


def find_relative(level: int, dotted: str, importer: str) -> Optional[str]:
    """`from ..a.b import x` in `importer`: the module `..a.b` names."""
    base = os.path.dirname(os.path.abspath(importer))
    for _ in range(level - 1):
        base = os.path.dirname(base)
    if not dotted:
        return module_file((), base) if reads.is_file(os.path.join(base, "__init__.py")) else base
    return module_file(dotted.split("."), base)


# --------------------------------------------------------------- summaries


def summarise(module: cst.Module, path: str, roots: Sequence[str]) -> ModuleSummary:
    """The definitions and first-party imports of `module` (at `path`)."""
    imports: dict[str, ImportTarget] = {}
    stars: list[str] = []
    for stmt in walk_statements(module.body):
        if type(stmt) is cst_nodes.Import:
            _add_import(stmt, roots, imports)
        elif type(stmt) is cst_nodes.ImportFrom:
            _add_import_from(stmt, path, roots, imports, stars)
    functions, classes, aliases = [], [], []
    exported: Optional[tuple[str, ...]] = None
    for stmt in module.body:
        if type(stmt) is cst_nodes.FunctionDef:
            functions.append(stmt.name.value)
        elif type(stmt) is cst_nodes.ClassDef:
            classes.append(stmt.name.value)
        elif type(stmt) is cst_nodes.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is not cst_nodes.Assign or len(small.targets) != 1:
                    continue
                target = small.targets[0].target
                if type(target) is not cst_nodes.Name:
                    continue
                if target.value == "__all__":
                    exported = _literal_names(small.value)
                elif (source := dotted_name(small.value)) is not None:
                    aliases.append((target.value, source))
    return ModuleSummary(path, tuple(imports.items()), tuple(dict.fromkeys(stars)), tuple(functions),
                         tuple(classes), tuple(aliases), exported)


def _add_import(stmt: cst.Import, roots: Sequence[str], imports: dict[str, ImportTarget]) -> None:
    for alias in stmt.names:
        full = dotted_name(alias.name) or ""
        if alias.asname is not None and type(alias.asname.name) is cst_nodes.Name:
            found = find_absolute(full, roots)
            if found is not None:
                imports[alias.asname.name.value] = ImportTarget(found)
        else:  # `import a.b` binds `a`
            head = full.split(".")[0]
            found = find_absolute(head, roots)
            if found is not None:
                imports.setdefault(head, ImportTarget(found))


def _add_import_from(stmt: cst.ImportFrom, path: str, roots: Sequence[str], imports: dict[str, ImportTarget],
                     stars: list[str]) -> None:
    dotted = dotted_name(stmt.module) if stmt.module is not None else ""
    level = len(stmt.relative)
    found = find_module(level, dotted or "", path, roots)
    if found is None:
        return
    if isinstance(stmt.names, cst.ImportStar):
        stars.append(found)
        return
    for alias in stmt.names:
        name = dotted_name(alias.name) or ""
        local = name
        if alias.asname is not None and type(alias.asname.name) is cst_nodes.Name:
            local = alias.asname.name.value
        imports[local] = ImportTarget(found, name)


def _literal_names(expr: cst.BaseExpression) -> Optional[tuple[str, ...]]:
    if type(expr) not in (cst_nodes.List, cst_nodes.Tuple):
        return None
    names: list[str] = []
    for element in expr.elements:  # type: ignore[attr-defined]
        if type(element.value) is not cst_nodes.SimpleString:
            return None
        value = element.value.evaluated_value
        if not isinstance(value, str):  # a bytes literal names nothing
            return None
        names.append(value)
    return tuple(names)


# --------------------------------------------------------------- the parse cache


@dataclass
class _Entry:
    key: Optional[tuple[int, int]]  # (mtime, size) of the file when its text was read; None: text given
    text: Optional[str]  # None: unreadable, undecodable or too large
    digest: Optional[str]  # of the file's bytes on disk (None: text given, disk not read)
    module: Optional[cst.Module]  # None: not parsable or too large
    # roots -> its summary and the file-system facts resolving its imports used
    summaries: dict[tuple[str, ...], tuple[ModuleSummary, tuple[tuple[str, str], ...]]] = field(default_factory=dict)
    imports: Optional[ImportMap] = None  # of `module`, once asked: every importer's analysis asks again
    layout: Optional[Layout] = None  # of `module` in `text` (`reparse`), once `laid_out`
    laid_out: bool = False

    @property
    def chars(self) -> int:
        return len(self.text) if self.module is not None and self.text is not None else 0

    def lay_out(self) -> Optional[Layout]:
        """The layout of its tree (`reparse.Layout`: a code generation of the
        module, about as costly as its parse), made once."""
        if not self.laid_out and self.module is not None and self.text is not None:
            self.layout = Layout.of(self.module, self.text)
            self.laid_out = True
        return self.layout

    def reparsed(self, text: str) -> Optional[tuple[cst.Module, Layout]]:
        """The tree of `text`, an edit of its text, from its tree (`reparse`)."""
        layout = self.lay_out()
        if layout is None or self.module is None or self.text is None:
            return None
        return reparse(self.text, self.module, layout, text)


class ModuleCache:
    """Modules parsed at most once per process while unchanged (an entry is
    checked by path, modification time and size, then by its text), least
    recently used dropped past `MAX_CACHED_CHARS`: a module imported by many
    files, or imported and linted, is parsed once per worker."""

    def __init__(self, budget: int = MAX_CACHED_CHARS, parse: Optional[Callable[[str], cst.Module]] = None) -> None:
        self.budget = budget
        self.parse = parse if parse is not None else parse_module  # raises what `parse_module` raises
        self.entries: OrderedDict[str, _Entry] = OrderedDict()
        self.chars = 0

    def module(self, path: str) -> Optional[cst.Module]:
        """The parsed module of the file at `path` (None when it cannot be
        read, parsed, or is too large), its content noted in `reads`."""
        try:
            stat = os.stat(path)
        except OSError:
            reads.path_state(path)
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        entry = self.entries.get(path)
        if entry is not None and entry.key == key and entry.digest is not None:
            self.entries.move_to_end(path)
            reads.note_content(path, entry.digest)
            return entry.module
        try:
            data = read_bytes(path)
        except SourceError:
            reads.path_state(path)
            return None
        digest = reads.content_digest(data)
        reads.note_content(path, digest)
        text: Optional[str] = None
        if len(data) <= MAX_MODULE_CHARS * 4:
            try:
                text = decode_source(data)
            except SourceError:
                text = None
        if text is not None and len(text) > MAX_MODULE_CHARS:
            text = None
        if entry is not None and entry.text is not None and entry.text == text:
            # linted from this very text
            fresh = _Entry(key, text, digest, entry.module, entry.summaries, entry.imports)
        else:
            fresh = _Entry(key, text, digest, self._parse(text) if text is not None else None)
        self._put(path, fresh)
        return fresh.module

    def tree(self, path: str, text: str) -> cst.Module:
        """The parse of `text`, the content of the file at `path` being
        linted: the cached tree when this process parsed the same text for
        `path` already, else a fresh parse kept for later importers.
        Raises what `parsing.parse_module` raises."""
        if self.holds(path, text):
            self.entries.move_to_end(os.path.abspath(path))
            return self.entries[os.path.abspath(path)].module  # type: ignore[return-value]
        previous = self._parsed_text(path)
        if previous is not None:
            # An edit of a text parsed before (the editor's keystroke): only the
            # statements it touched are parsed again (`reparse`).
            again = previous.reparsed(text)
            if again is not None:
                module, layout = again
                self._put(os.path.abspath(path), _Entry(None, text, None, module, layout=layout, laid_out=True))
                return module
        module = parse_module(text)
        if path and len(text) <= MAX_MODULE_CHARS:
            self._put(os.path.abspath(path), _Entry(None, text, None, module))
        return module

    def holds(self, path: str, text: str) -> bool:
        """Whether the tree of `text`, the content of the file at `path`, is
        parsed already (`tree` would not parse)."""
        entry = self.entries.get(os.path.abspath(path)) if path else None
        return entry is not None and entry.module is not None and entry.text == text

    def prepare_reparse(self, path: str) -> None:
        """Lay out the tree kept for `path` now (`_Entry.lay_out`), so that
        the next edit's reparse does not pay for it: the language server's
        lint process calls this after replying, off the keystroke's path."""
        entry = self._parsed_text(path)
        if entry is not None:
            entry.lay_out()

    def _parsed_text(self, path: str) -> Optional[_Entry]:
        """The entry of `path` holding a text and its tree, if any."""
        entry = self.entries.get(os.path.abspath(path)) if path else None
        return entry if entry is not None and entry.module is not None and entry.text is not None else None

    def parsed_before(self, path: str) -> bool:
        """Whether a text of the file at `path` was parsed whole in this
        process (the text before an edit, in the language server's lint
        process): `tree` of a new text then parses only what the edit touched."""
        return self._parsed_text(path) is not None

    def summary(self, path: str, module: cst.Module, roots: tuple[str, ...]) -> ModuleSummary:
        """`summarise`, once per cached module and roots; a reuse notes again
        the file-system facts its resolution relied on."""
        entry = self.entries.get(path)
        if entry is None or entry.module is not module:
            return summarise(module, path, roots)
        cached = entry.summaries.get(roots)
        if cached is None:
            with reads.recording() as facts:
                found = summarise(module, path, roots)
            cached = entry.summaries[roots] = (found, tuple(facts.items()))
        else:
            reads.replay(cached[1])
        return cached[0]

    def import_map(self, path: str, module: cst.Module) -> ImportMap:
        """`ImportMap.of(module)`, once per cached module (a walk of every
        statement, imports inside functions included)."""
        entry = self.entries.get(os.path.abspath(path)) if path else None
        if entry is None or entry.module is not module:
            return ImportMap.of(module)
        if entry.imports is None:
            entry.imports = ImportMap.of(module)
        return entry.imports

    def _put(self, path: str, entry: _Entry) -> None:
        if path in self.entries:
            self._drop(path)
        self.entries[path] = entry
        self.chars += entry.chars
        while self.chars > self.budget and len(self.entries) > 1:
            self._drop(next(iter(self.entries)))

    def _drop(self, path: str) -> None:
        self.chars -= self.entries.pop(path).chars

    def _parse(self, text: str) -> Optional[cst.Module]:
        try:
            return self.parse(text)
        except (cst_nodes.ParserSyntaxError, RecursionError, ValueError):
            return None


def _quick_or_libcst(text: str) -> cst.Module:
    """The quick tree of `text`; libcst's where it builds none (the syntax
    it leaves out, a text CPython refuses), so the module is never less
    known to a quick analysis than to a whole one."""
    try:
        return quick_tree.quick_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return parse_module(text)


CACHE = ModuleCache()
# The trees the quick analyses of this process read (`lint._quick_finds_nothing`):
# kept apart, since a hazard's related locations need libcst's own trees.
QUICK_CACHE = ModuleCache(parse=_quick_or_libcst)


# --------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Found:
    """A definition another module lends: a top-level function or class
    (`node`) of the module at `path`."""

    node: Union[cst.FunctionDef, cst.ClassDef]
    path: str


class Project:
    """The modules one analysis reaches, each loaded once for it; `load`
    builds the per-analysis view of a module (its `Program`) from the
    process-wide parse cache."""

    def __init__(self, src: Sequence[str], project_root: str, load: Callable[[str, cst.Module, ModuleSummary], Program],
                 cache: ModuleCache = CACHE) -> None:
        self.src = tuple(src)
        self.project_root = project_root
        self.cache = cache
        self._load: Optional[Callable[[str, cst.Module, ModuleSummary], Program]] = load
        self.loaded: dict[str, Optional[Program]] = {}  # path -> its view (None: not loadable)
        self.homes: dict[cst.CSTNode, Program] = {}  # each definition -> the program of its module
        self.resolving: set[tuple[str, str]] = set()
        # folder -> its roots: one analysis asks once per module it reaches, not
        # once per lookup (each asking walks up to the project marker, a stat per
        # folder). The facts the walk noted are in this lint's record already.
        self._roots: dict[str, tuple[str, ...]] = {}
        self._summaries: dict[str, Optional[ModuleSummary]] = {}
        self._found: dict[tuple[str, str], Optional[Found]] = {}  # outermost lookups, complete

    def close(self) -> None:
        """Drop every program (they refer back to the project), so the trees
        they hold are freed by reference counting when the file is done."""
        self._load = None
        self.loaded.clear()
        self.homes.clear()
        self.resolving.clear()
        self._roots.clear()
        self._summaries.clear()
        self._found.clear()

    def roots(self, path: str) -> tuple[str, ...]:
        folder = os.path.dirname(os.path.abspath(path))
        found = self._roots.get(folder)
        if found is None:
            found = self._roots[folder] = roots_for(path, self.src, self.project_root)
        return found

    def summary_of(self, path: str, module: cst.Module) -> ModuleSummary:
        return self.cache.summary(path, module, self.roots(path))

    def add(self, path: str, program: Program) -> None:
        """`program` is the view of the module at `path` (registered before
        its definitions are read, so a cycle back to it finds it)."""
        self.loaded[os.path.abspath(path)] = program

    def program(self, path: str) -> Optional[Program]:
        path = os.path.abspath(path)
        if path in self.loaded or self._load is None:
            return self.loaded.get(path)
        if reads.is_dir(path):
            self.loaded[path] = None
            return None
        if sum(1 for p in self.loaded.values() if p is not None) > MAX_MODULES_PER_ANALYSIS:
            return None  # past the bound: unknown, as without project analysis
        module = self.cache.module(path)
        if module is None:
            self.loaded[path] = None
            return None
        self.loaded[path] = None  # a cycle reaching it while it loads sees nothing yet
        return self._load(path, module, self.summary_of(path, module))

    def lookup(self, summary: ModuleSummary, parts: Sequence[str]) -> Optional[Found]:
        """The definition that dotted name `parts`, used in the module of
        `summary`, stands for (through imports, re-exports, star imports,
        module aliases and submodules)."""
        head, rest = parts[0], list(parts[1:])
        key = (summary.path, ".".join(parts))
        if key in self._found:
            return self._found[key]
        if key in self.resolving:
            return None
        outermost = not self.resolving  # no cycle cut short what it finds
        self.resolving.add(key)
        try:
            found = self._lookup(summary, head, rest)
        finally:
            self.resolving.discard(key)
        if outermost:
            self._found[key] = found
        return found

    def _lookup(self, summary: ModuleSummary, head: str, rest: list[str]) -> Optional[Found]:
        if head in summary.functions or head in summary.classes:
            return None if rest else self._definition(summary.path, head)
        alias = summary.alias_of(head)
        if alias is not None:
            return self.lookup(summary, alias.split(".") + rest)
        target = summary.import_of(head)
        if target is not None:
            return self._in_target(target, rest)
        for star in summary.star_imports:
            inner = self._summary(star)
            if inner is not None and not head.startswith("_") and (inner.exported is None or head in inner.exported):
                found = self.lookup(inner, [head, *rest])
                if found is not None:
                    return found
        if rest and is_package(summary.path) and (sub := submodule(summary.path, head)) is not None:
            return self._in_target(ImportTarget(sub), rest)
        return None

    def _in_target(self, target: ImportTarget, rest: list[str]) -> Optional[Found]:
        parts = ([target.name] if target.name is not None else []) + rest
        if not parts:
            return None  # a module object itself lends no definition
        if target.name is not None and (sub := submodule(target.path, target.name)) is not None:
            inner_summary = self._summary(target.path)
            defined_there = inner_summary is not None and self._defines(inner_summary, target.name, target)
            if not defined_there:  # `from pkg import mod`: the submodule
                return self._in_target(ImportTarget(sub), rest)
        summary = self._summary(target.path)
        return self.lookup(summary, parts) if summary is not None else None

    @staticmethod
    def _defines(summary: ModuleSummary, name: str, target: ImportTarget) -> bool:
        """Does the package module of `summary` bind `name` to something other
        than its submodule `target`? (`from . import algorithms` in the
        package's `__init__`, as learn2learn's, imports that submodule: read
        as a definition, `l2l.algorithms.MAML` looked itself up forever.)"""
        imported = summary.import_of(name)
        return (name in summary.functions or name in summary.classes
                or (imported is not None and imported != target) or summary.alias_of(name) is not None)

    def _summary(self, path: str) -> Optional[ModuleSummary]:
        """The summary of the module at `path`, read once per analysis (a
        lookup through a package's `__init__` asks for it again and again)."""
        if path in self._summaries:
            return self._summaries[path]
        if reads.is_dir(path):
            found: Optional[ModuleSummary] = ModuleSummary(path, (), (), (), (), (), None)  # submodules only
        else:
            module = self.cache.module(path)
            found = self.summary_of(path, module) if module is not None else None
        self._summaries[path] = found
        return found

    def _definition(self, path: str, name: str) -> Optional[Found]:
        program = self.program(path)
        if program is None:
            return None
        node: Union[cst.FunctionDef, cst.ClassDef, None] = program.functions.get(name)
        if node is None and name in program.classes:
            node = program.classes[name].node
        return Found(node, os.path.abspath(path)) if node is not None else None
