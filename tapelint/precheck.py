"""A textual pre-check that skips files which cannot hold a hazard, before
paying for a parse.

Every hazard but one needs a backward call, and every backward call the
analysis recognises is a method call `.backward(`/`.manual_backward(`, goes
through `torch.autograd`, is a configured backward function, or is a
framework's backward of what a hook the file defines returns
(`def compute_loss(`, `def training_step(`); a file that
only *defines* `backward` (an autograd Function) has none. The one
exception, TL003 in an evaluation loop, needs a loop, an accumulating
statement, and a value tracked by construction — which only a literal
`requires_grad=True`/`requires_grad_()`, a `Parameter`, `parameters()`, a
parametric layer of `torch.nn` (a module class of the file owns parameters
only through those), a library model factory (`from_pretrained(`), or a
configured tracked function can produce. (Across files: a file is also
kept when a first-party module it imports holds a marker, when it loops
and accumulates over a module's tracked values, or when it passes its own
tracked values to a module that loops and accumulates.)

Only substring searches here (a regular expression is tried only once a
substring matched): they cost a few milliseconds per megabyte.

A second stage (`may_hold_hazard_in_tree`) judges a file the first kept, on
the CPython tree its lint parses anyway: when no backward marker is in it,
and no name it imports leads, definition by definition, to one holding a
marker (`analysis.backward_reach`: a module with a training loop in one
function does not keep every importer of its other names), only TL003 in
an evaluation loop is left, and that needs a total some loop in reach
accumulates and only reports after the loop (`reported_totals`); with none,
the file is skipped. A package bound as a name (`import pkg`, `from pkg
import sub`) is followed through the attributes read on it (`pkg.sub.f`);
passed on as a value, it keeps the file.
`tests/test_precheck.py` proves on the fixtures and on the installed torch
package that a skipped file never has a diagnostic.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Hashable, Iterator
from typing import Optional, TypeVar

from tapelint.analysis import reads
from tapelint.analysis.backward_reach import KEEPS, Find, ModuleGraph, Target, module_graph, reach, starts
from tapelint.analysis.parsing import python_tree
from tapelint.analysis.project import MAX_MODULE_CHARS, find_module, is_package, roots_for
from tapelint.analysis.reported_totals import Totals, reports_a_total, totals_of
from tapelint.analysis.torch_api import STEP_HOOK_NAMES
from tapelint.files import SourceError, decode_source, read_bytes
from tapelint.ops import PARAMETRIC_MODULES
from tapelint.settings import Settings

_BACKWARD_CALL = re.compile(r"\.\s*(?:manual_)?backward\s*\(")
_AUTOGRAD_CALL = re.compile(
    r"autograd\.(?:grad|backward)\b|from\s+torch\.autograd\s+import[^\n]*\b(?:grad|backward)\b"
    r"|\bautograd\s+as\b"
)
# `requires_grad` only with a literal true flag: a runtime flag leaves a value's
# tracking unknown, and unknown is never reported.
_REQUIRES_GRAD = re.compile(
    r"requires_grad\s*=\s*(?:True\b|0*[1-9])"
    r"|requires_grad_\(\s*(?:requires_grad\s*=\s*)?(?:True\b|0*[1-9]|\))"
)
_TRACKING = (
    "Parameter(", "parameters(", "from_pretrained(", "from_config(", "get_peft_model(", "instantiate(",
) + tuple(f"{m}(" for m in PARAMETRIC_MODULES)
_LOOPS = ("for ", "while ")
# `+=`, `list.append(`, `total.add_(`, or an assignment whose value adds or subtracts (`t = t + x`)
_ACCUMULATING = ("+=", "-=", ".append(", ".extend(", ".insert(", ".add(", ".update(", ".setdefault(", ".add_(",
                 ".sub_(", "+", "-")
# `t = t + x` (or `-`): a target added to itself, however it is spelled after the `=`.
_RESUMMING = re.compile(
    r"^[ \t]*([\w.]+)[ \t]*=(?!=)[^\n]*?\b\1\b[^\n]*?[-+]|^[ \t]*([\w.]+)[ \t]*=(?!=)[^\n]*?[-+][^\n]*?\b\2\b",
    re.MULTILINE,
)
_COMMENT_LINE = re.compile(r"^[ \t]*#[^\r\n]*", re.MULTILINE)


def may_hold_hazard(source: str, settings: Settings, path: str | None = None) -> bool:
    """With `path`, also true when a first-party module the file imports
    holds a marker: a hazard may run through that module's code from here
    (`train(model, loader)` of another file, called with this file's model)."""
    if _holds_marker(source, settings):
        return True
    return path is not None and _imports_marker(source, path, settings)


def holds_seed(code: str, settings: Settings) -> bool:
    """Whether a part of a module (a def, a class, a method) holds what the
    analysis acts on by itself: a marker, or a loop that accumulates (its
    tracked value may come from elsewhere in the module: `analysis.thin`)."""
    # (a backward asked first: most parts hold none, and are spared the scan for tracked values)
    if _backward_marker(code, settings) and _holds_marker(code, settings):
        return True
    if not any(m in code for m in _LOOPS):
        return False
    return any(m in code for m in _ACCUMULATING[:-2]) or _RESUMMING.search(code) is not None


def _holds_marker(source: str, settings: Settings) -> bool:
    if not _has_marker(source, settings):
        return False
    # A marker may sit in a comment (`# x.backward() would fail here`): look
    # again without whole-line comments, which hold no code.
    return "#" not in source or _has_marker(_COMMENT_LINE.sub("", source), settings)


def _imports_marker(source: str, path: str, settings: Settings) -> bool:
    """A first-party module imported here holds a marker, lends tracked
    values (a model class) to this file's loop that accumulates, or holds a
    loop that accumulates what this file's tracked values make (an
    `evaluate(model, loader)` called with this file's model) — itself or
    through the modules it imports (`from .a import *` in a package's
    `__init__.py`, whose `a` re-exports the model of `models`; `import b`
    in a module whose function calls `b.run()`), followed transitively like
    the analysis follows a name or a call. A package bound as a name, or
    more modules than `MAX_FOLLOWED`, keep the file."""
    if "import" not in source:
        return False
    accumulates = _accumulates(source)
    tracks_here: Optional[bool] = None  # asked only of a module that accumulates
    roots: dict[str, tuple[str, ...]] = {}
    pending = [_imported_files(_imports_of(source), path, settings, roots)]
    seen: set[str] = set()
    while pending:
        found = next(pending[-1], None)
        if found is None:
            pending.pop()
            continue
        if found == _A_PACKAGE or len(seen) == MAX_FOLLOWED:
            return True
        if found in seen:
            continue
        seen.add(found)
        marked, tracks, accumulates_there, imports = _markers_of(found, settings)
        if marked or (tracks and accumulates):
            return True
        if accumulates_there:
            if tracks_here is None:
                tracks_here = _tracks_by_construction(source)
            if tracks_here:
                return True
        pending.append(_imported_files(imports, found, settings, roots))
    return False


# Modules looked into per file (its imports, theirs, ...): bounds the cost
# on a package whose `__init__.py` re-exports everything; past it the file
# is kept.
MAX_FOLLOWED = 64
_IMPORT_LINE = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b[ \t]*(?:\(([^)]*)\)|([^\n#;]*))|import[ \t]+([^\n#;]*))",
    re.MULTILINE,
)
_AS = re.compile(r"\s+as\s+")
_TRAILING_COMMENT = re.compile(r"#[^\n]*")
# One import line: (leading dots, module, the names imported; None for a
# plain `import x`).
ImportSpec = tuple[int, str, Optional[tuple[str, ...]]]


def _imports_of(source: str) -> tuple[ImportSpec, ...]:
    specs: list[ImportSpec] = []
    for dots, module, grouped, names, plain in _IMPORT_LINE.findall(source):
        if plain:  # `import a.b, c as d`: `a.b` and the package `a` it binds, `c`
            for item in plain.split(","):
                parts = _AS.split(item.strip(), maxsplit=1)
                dotted = parts[0]
                if all(part.isidentifier() for part in dotted.split(".")):
                    specs.append((0, dotted, None))
                    if len(parts) == 1 and "." in dotted:
                        specs.append((0, dotted.partition(".")[0], None))
            continue
        # (a parenthesised list may run over lines, with comments)
        text = _TRAILING_COMMENT.sub("", grouped) if grouped else names
        listed = (_AS.split(n.strip())[0] for n in text.strip(" \t()\\").split(","))
        specs.append((len(dots), module, tuple(n for n in listed if n.isidentifier())))
    return tuple(specs)


def _imported_files(specs: tuple[ImportSpec, ...], importer: str, settings: Settings,
                    known_roots: dict[str, tuple[str, ...]]) -> Iterator[str]:
    """The first-party files `specs` of the file `importer` name: each module,
    and of a package, each imported name that is a submodule (`from . import
    models`). Last first, the order the pre-check follows them in (which
    decides what `MAX_FOLLOWED` reaches), and each looked up only when the
    pre-check gets to it: a file kept at its first marker notes only the
    lookups its verdict rests on. `known_roots` (folder -> its roots) is
    this pre-check's: a folder's roots are looked for once, their facts
    noted already."""
    folder = os.path.dirname(os.path.abspath(importer))
    roots = known_roots.get(folder)
    if roots is None:
        roots = known_roots[folder] = roots_for(importer, settings.src, settings.project_root)
    for level, module, names in reversed(specs):
        found = find_module(level, module, importer, roots)
        if found is None:
            continue
        if is_package(found):
            if names is None:  # `import pkg` binds the package: `pkg.train.run()` reaches any submodule
                yield _A_PACKAGE
                return
            for name in reversed(names):
                sub = find_module(level, f"{module}.{name}" if module else name, importer, roots)
                if sub is not None and is_package(sub):  # `from pkg import sub` binds a package too
                    yield _A_PACKAGE
                    return
                if sub is not None and reads.is_file(sub):
                    yield sub
        if reads.is_file(found):
            yield found


# What `_imported_files` yields for a package an import binds as a name: the
# analysis reaches each of its submodules through an attribute, so the
# pre-check keeps the file (as its second stage does).
_A_PACKAGE = "<a package>"


# (holds a marker, tracks by construction, holds a loop that accumulates, its imports)
_Markers = tuple[bool, bool, bool, tuple[ImportSpec, ...]]
_NO_MARKERS: _Markers = (False, False, False, ())
# (path, mtime, size, names) -> (its markers, content digest)
_MARKERS: dict[tuple, tuple[_Markers, str]] = {}


def _markers_of(path: str, settings: Settings) -> _Markers:
    """Whether the module at `path` holds a marker, tracks by construction,
    holds a loop that accumulates, and its imports (through which it
    re-exports other modules' names and calls their functions)."""
    return _module_fact(_MARKERS, path, settings, _read_markers, _NO_MARKERS)


def _read_markers(data: bytes, settings: Settings) -> _Markers:
    try:
        code = _COMMENT_LINE.sub("", decode_source(data))
    except SourceError:
        return _NO_MARKERS
    tracks, accumulates = _tracks_by_construction(code), _accumulates(code)
    marked = (tracks and accumulates) or _backward_marker(code, settings)  # `_has_marker`
    return marked, tracks, accumulates, _imports_of(code)


_Fact = TypeVar("_Fact")


def _module_fact(cache: dict[tuple, tuple[_Fact, str]], path: str, settings: Settings,
                 read: Callable[[bytes, Settings], _Fact], unread: _Fact) -> _Fact:
    """`read` of the bytes of the module at `path`, once per process while
    they are unchanged (`cache`, by path, modification time, size and the
    configured names); `unread` when it cannot be read. Each answer notes
    in `reads` what it rests on, so the result cache lints the file again
    when the module changes."""
    try:
        stat = os.stat(path)
    except OSError:
        reads.path_state(path)
        return unread
    key = (path, stat.st_mtime_ns, stat.st_size, settings.backward_functions, settings.tracked_functions)
    found = cache.get(key)
    if found is None:
        try:
            data = read_bytes(path)
        except SourceError:
            reads.path_state(path)
            return unread
        if len(cache) > 4096:
            cache.clear()
        found = cache[key] = (read(data, settings), reads.content_digest(data))
    reads.note_content(path, found[1])
    return found[0]


def _has_marker(source: str, settings: Settings) -> bool:
    if _backward_marker(source, settings):
        return True
    return _tracks_by_construction(source) and _accumulates(source)


def _accumulates(source: str) -> bool:
    """A loop and an accumulating statement, by their spelling."""
    return any(marker in source for marker in _LOOPS) and any(marker in source for marker in _ACCUMULATING)


def _backward_marker(source: str, settings: Settings) -> bool:
    """A marker other than a value tracked by construction: a backward, or
    what a framework or the configuration backwards."""
    if "backward" in source and _BACKWARD_CALL.search(source):
        return True
    if "autograd" in source and _AUTOGRAD_CALL.search(source):
        return True  # torch.autograd.grad / backward, however imported
    if "def " in source and any(f"def {hook}(" in source for hook in STEP_HOOK_NAMES):
        return True  # a framework backwards what this hook returns (`analysis/protocols.py`)
    names = settings.backward_functions + settings.tracked_functions
    return any(name.split(".")[-1] in source for name in names)


def _tracks_by_construction(source: str) -> bool:
    if "requires_grad" in source and _REQUIRES_GRAD.search(source):
        return True
    return any(marker in source for marker in _TRACKING)


# Modules the second stage looks into from one imported name before it gives up (and
# keeps the file): a detectron2 config reaches 92 through its model zoo.
MAX_REACHED = 128
# (path, mtime, size, names) -> (its graph, or None when the analysis never loads it; content digest)
_GRAPHS: dict[tuple, tuple[Optional[ModuleGraph], str]] = {}


def may_hold_hazard_in_tree(source: str, tree: ast.Module, settings: Settings, path: str) -> bool:
    """The second stage, for a file the first kept (`tree`: its CPython
    tree): false when no name it imports leads to a definition holding a
    backward marker (`analysis.backward_reach`), and no total accumulated
    in reach is only reported after a loop there."""
    if _backward_marker(source, settings) and ("#" not in source or _backward_marker(
            _COMMENT_LINE.sub("", source), settings)):
        return True
    if path and os.path.basename(path) == "__init__.py":
        return True  # a package: its submodules are in reach
    totals: list[Totals] = []
    if path:
        roots: dict[str, tuple[str, ...]] = {}  # by folder, for this file

        def find(level: int, dotted: str, importer: str) -> Optional[str]:
            return _find(level, dotted, importer, settings, roots)

        for start in starts(os.path.abspath(path), tree, find):
            keeps, reached = _reach(start, settings, find)
            if keeps:
                return True
            totals.extend(reached)
    try:
        totals.append(totals_of(tree))  # (last: a backward in reach spares it)
    except RecursionError:
        return True
    return reports_a_total(totals)


# (level, dotted module, importing folder, the settings that decide it) -> (the
# module's path, the facts on disk that rests on)
_FOUND: dict[Hashable, tuple[Optional[str], tuple[tuple[str, str], ...]]] = {}


def _find(level: int, dotted: str, importer: str, settings: Settings, roots: dict[str, tuple[str, ...]]
          ) -> Optional[str]:
    """The first-party module an import in the file `importer` (an absolute
    path) names; once per folder for the run (`reads.for_the_run`).
    `roots`: each folder's import roots, as far as this file looked."""
    folder = os.path.dirname(importer)

    def look() -> Optional[str]:
        # (kept for the run, an answer notes all it rests on: its own look for the roots too)
        if reads.one_view_for_the_run() or folder not in roots:
            roots[folder] = roots_for(importer, settings.src, settings.project_root)
        module = find_module(level, dotted, importer, roots[folder])
        return os.path.abspath(module) if module is not None else None

    return reads.for_the_run(_FOUND, (level, dotted, folder, settings.src, settings.project_root), look, 65536)


# (where a name leads, the settings that decide it) -> ((whether it keeps the file,
# the totals of the modules in its reach), the facts on disk that rests on)
_REACHED: dict[Hashable, tuple[tuple[bool, tuple[Totals, ...]], tuple[tuple[str, str], ...]]] = {}


def _reach(start: Target, settings: Settings, find: Find) -> tuple[bool, tuple[Totals, ...]]:
    """`backward_reach.reach` from `start`, once for the run (`reads.for_the_run`:
    in a worker, many files import the same names)."""
    def follow() -> tuple[bool, tuple[Totals, ...]]:
        keeps, graphs = reach(start, lambda module: _graph_of(module, settings), find, MAX_REACHED)
        return keeps, tuple(graph.totals for graph in graphs)

    key = (start, settings.src, settings.project_root, settings.backward_functions, settings.tracked_functions)
    return reads.for_the_run(_REACHED, key, follow, 16384)


def _graph_of(path: str, settings: Settings) -> Optional[ModuleGraph]:
    return _module_fact(_GRAPHS, path, settings, _read_graph, None)


def _read_graph(data: bytes, settings: Settings) -> Optional[ModuleGraph]:
    if len(data) > MAX_MODULE_CHARS * 4:
        return None  # (as `project.ModuleCache.module` judges it)
    try:
        text = decode_source(data)
    except SourceError:
        return None
    if len(text) > MAX_MODULE_CHARS:
        return None
    code = _COMMENT_LINE.sub("", text)
    marked = _backward_marker(code, settings)
    try:
        tree = python_tree(text)
        return module_graph(tree, code, (lambda part: _backward_marker(part, settings)) if marked else _nowhere)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return KEEPS


def _nowhere(code: str) -> bool:
    """No part of a module without a backward marker holds one."""
    return False
