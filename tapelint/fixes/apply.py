"""Apply the fixes that rules attach to their diagnostics (`check --fix`, `--diff`).

Edits are text ranges computed from libcst positions, so everything outside
them (formatting, comments, line endings, encoding) stays byte for byte.
Per diagnostic, the first fix whose safety is allowed and that has edits is
used (rules list the preferred fix first); fixes whose edits overlap one
already taken wait for the next pass. After each pass the text is linted
again, up to a fixed point (ruff's loop), so a second `--fix` changes
nothing. A pass whose result no longer parses is discarded: a fix never
turns a parsing file into a broken one.

Files are linted as stored (`lint_document`): suppressed diagnostics are
not fixed, and a notebook's edits (in cell coordinates) go to their cells,
written back with `notebooks.replace_cells`.

Writing (`tapelint.writing`: atomic, hard links kept, never a stray
temporary file) never touches a file whose text did not change, and refuses
a file that changed on disk since it was read.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional, TextIO

from tapelint import notebooks
from tapelint.diagnostics import Edit, FileError, FileResult, Fix, Position
from tapelint.document import lint_document
from tapelint.files import SourceError, decode_source
from tapelint.fixes.safety import Fixable, applicable_fix
from tapelint.notebooks import is_notebook
from tapelint.rules.tl900_parse_error import ParseError
from tapelint.settings import Settings
from tapelint.writing import FixError, _encoding, _read, _write

# Passes of fix-and-relint; each pass applies every non-overlapping fix, so
# more than a few means fixes that undo each other.
MAX_PASSES = 10
NOTHING_HIDDEN = Fixable(0, 0)  # no diagnostic left that only `--unsafe-fixes` would fix


@dataclass(frozen=True)
class FixedFile:
    """One file after fixing: its text before and after, how many diagnostics
    were fixed, and the diagnostics that remain (linted on the new text)."""

    path: str
    original: str
    fixed: str
    fixed_count: int
    result: FileResult
    written: bool = False

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        """A unified diff of the change (empty when nothing changed)."""
        return unified_diff(self.path, self.original, self.fixed)


def has_applicable_fix(result: FileResult, unsafe: bool) -> bool:
    return any(applicable_fix(d, unsafe) is not None for d in result.diagnostics)


def fix_source(text: str, path: str, settings: Settings) -> tuple[str, int, FileResult]:
    """Fix a file's text (a module, or a notebook's JSON) to a fixed point,
    with unsafe fixes if `settings.unsafe_fixes`: (new text, diagnostics
    fixed, what remains). Suppressed diagnostics are not fixed."""
    count = 0
    result = lint_document(text, path, settings)
    for _ in range(MAX_PASSES):
        fixes = [f for f in (applicable_fix(d, settings.unsafe_fixes) for d in result.diagnostics) if f is not None]
        if not fixes:
            break
        new_text, applied = _apply_to_document(text, path, fixes)
        if not applied or new_text == text:
            break
        new_result = lint_document(new_text, path, settings)
        if any(d.code == ParseError.code for d in new_result.diagnostics) or new_result.errors:
            break  # a fix produced code that does not parse: keep the last good text
        text, result, count = new_text, new_result, count + applied
    return text, count, result


def _apply_to_document(text: str, path: str, fixes: list[Fix]) -> tuple[str, int]:
    if not is_notebook(path):
        sources, applied = apply_fixes({None: text}, fixes)
        return sources[None], applied
    cells = notebooks.load(text)["cells"]
    touched = {e.range.start.cell for f in fixes for e in f.edits}
    sources = {cell: notebooks.cell_source(cells[cell - 1]) for cell in touched if cell is not None}
    new_sources, applied = apply_fixes(sources, fixes)
    changed = {cell: source for cell, source in new_sources.items() if cell is not None and source != sources[cell]}
    return (notebooks.replace_cells(text, changed) if changed else text), applied


def apply_fixes(sources: Mapping[Optional[int], str], fixes: Iterable[Fix]) -> tuple[dict[Optional[int], str], int]:
    """Apply every fix whose edits overlap no fix taken before it (in order of
    position), bottom-up. `sources` maps a notebook cell (None: the module)
    to its text; an edit applies to the text of its range's cell. A fix
    identical to one taken counts as applied too. Returns the new texts and
    the number of fixes applied."""
    starts = {cell: _line_starts(text) for cell, text in sources.items()}
    taken: list[tuple[Optional[int], int, int, str]] = []
    seen: set[tuple[Edit, ...]] = set()
    applied = 0
    for fix in sorted(fixes, key=lambda f: min((e.range.start.cell or 0, e.range.start) for e in f.edits)):
        edits = tuple(sorted(fix.edits, key=lambda e: (e.range.start.cell or 0, e.range.start, e.range.end)))
        if edits in seen:
            applied += 1
            continue
        if any(e.range.start.cell != e.range.end.cell or e.range.start.cell not in sources for e in edits):
            continue
        spans = [
            (cell, _offset(starts[cell], sources[cell], e.range.start),
             _offset(starts[cell], sources[cell], e.range.end), e.new_text)
            for e in edits
            for cell in (e.range.start.cell,)
        ]
        clash = any(_overlaps(a, b) for a in spans for b in taken) or any(
            _overlaps(a, b) for i, a in enumerate(spans) for b in spans[i + 1 :]
        )
        if clash or any(start > end for _, start, end, _ in spans):
            continue
        taken.extend(spans)
        seen.add(edits)
        applied += 1
    texts = dict(sources)
    for cell, start, end, new_text in sorted(taken, key=lambda s: (s[0] or 0, s[1], s[2]), reverse=True):
        texts[cell] = texts[cell][:start] + new_text + texts[cell][end:]
    return texts, applied


def _overlaps(a: tuple[Optional[int], int, int, str], b: tuple[Optional[int], int, int, str]) -> bool:
    """Do two edits overlap? An insertion touching the other edit counts:
    the order of the two texts would be arbitrary."""
    (cell, start, end, _), (other_cell, other_start, other_end, _) = a, b
    if cell != other_cell:
        return False
    if start < other_end and other_start < end:
        return True
    return (start == end or other_start == other_end) and other_start <= end and start <= other_end


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts, lines split as libcst counts them."""
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _offset(starts: list[int], text: str, position: Position) -> int:
    if position.line - 1 >= len(starts):
        return len(text)  # the start of the line after the last one
    return min(starts[position.line - 1] + position.column, len(text))


def unified_diff(path: str, before: str, after: str) -> str:
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path, tofile=path
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def fix_file(path: str, settings: Settings, *, write: bool = True) -> FixedFile:
    """Read, fix and (with `write`) write one file. Raises `FixError` when the
    file cannot be read or written, or changed on disk meanwhile; the file is
    then left as it was."""
    data, before = _read(path)
    try:
        source = decode_source(data)
    except SourceError as exc:
        raise FixError(str(exc)) from None
    fixed, count, result = fix_source(source, path, settings)
    if fixed == source or not write:
        return FixedFile(path, source, fixed, count, result)
    _write(path, fixed.encode(_encoding(data)), data, before)
    return FixedFile(path, source, fixed, count, result, written=True)


@dataclass(frozen=True)
class FixRun:
    """What `check --fix` / `--diff` did to a set of files."""

    files: tuple[FixedFile, ...]
    errors: tuple[FileError, ...]

    @property
    def fixed_count(self) -> int:
        return sum(f.fixed_count for f in self.files)

    @property
    def changed(self) -> tuple[FixedFile, ...]:
        return tuple(f for f in self.files if f.changed)


def fix_files(
    results: Iterable[FileResult], settings: Sequence[Settings], *, write: bool = True
) -> tuple[tuple[FileResult, ...], FixRun]:
    """Fix the files of a lint run that have something to fix, each with its
    own settings (unsafe fixes if its `unsafe_fixes`). Returns the results
    with each fixed file's result replaced by what remains after fixing (a
    file that could not be fixed keeps its diagnostics and gains an error),
    and what was done."""
    results_out: list[FileResult] = []
    done: list[FixedFile] = []
    errors: list[FileError] = []
    for result, file_settings in zip(results, settings):
        if not has_applicable_fix(result, file_settings.unsafe_fixes):
            results_out.append(result)
            continue
        try:
            fixed = fix_file(result.path, file_settings, write=write)
        except FixError as exc:
            error = FileError(result.path, str(exc))
            errors.append(error)
            results_out.append(FileResult(result.path, result.diagnostics, result.errors + (error,), result.skipped))
            continue
        done.append(fixed)
        results_out.append(fixed.result)
    return tuple(results_out), FixRun(tuple(done), tuple(errors))


def write_diff(run: FixRun, out: TextIO, err: TextIO, hidden: Fixable = NOTHING_HIDDEN) -> None:
    """`--diff`: every change as a unified diff on `out`, a count on `err`
    (and how many more `--unsafe-fixes` would change: `hidden`)."""
    for fixed in run.changed:
        out.write(fixed.diff())
    for error in run.errors:
        err.write(f"tapelint: error: {error.path}: {error.message}\n")
    err.write(f"Would fix {_plural(run.fixed_count)}{hidden.more_with_unsafe()}\n")


def summary(run: FixRun, hidden: Fixable = NOTHING_HIDDEN) -> str:
    return f"Fixed {_plural(run.fixed_count)}{hidden.more_with_unsafe()}"


def hidden_fixes(results: Iterable[FileResult], settings: Sequence[Settings]) -> Fixable:
    """The diagnostics left that only `--unsafe-fixes` would fix, in files
    whose settings do not allow unsafe fixes."""
    return Fixable.count(d for result, file_settings in zip(results, settings) if not file_settings.unsafe_fixes
                         for d in result.diagnostics)


def _plural(count: int) -> str:
    return f"{count} diagnostic{'' if count == 1 else 's'}"
