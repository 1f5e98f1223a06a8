"""Inline suppressions: `# noqa`, `# tapelint: ignore[...]`, `# tapelint: skip-file`.

    loss_sum += loss  # noqa: TL003
    loss_sum += loss  # tapelint: ignore[TL003, tracked-accumulation]
    loss_sum += loss  # noqa             (every rule, as in ruff and flake8)
    loss_sum += loss  # tapelint: ignore (every rule)
    # tapelint: skip-file                (the file is not analysed at all)

Decisions (ruff's unless said otherwise):

* `# noqa: ...` takes codes (`TL001`, case insensitive) and tapelint's
  kebab-case rule names (`hoisted-tracked-tensor`), comma- and/or
  space-separated, as everywhere a rule is named; codes of other tools
  (`E501`) are left alone, so flake8 and ruff still read the same comment.
  Text after the list (`# noqa: TL003 because ...`) is a remark.
  `# tapelint: ignore[...]` takes the same codes and names. Several
  directives may share one comment (`# noqa: E501  # tapelint: ignore[TL003]`).
* An invalid directive is reported as a warning (`FileResult.warnings`, on
  stderr; ruff's "Invalid `# noqa` directive"), whatever rules are selected:
  `# noqa:` with no list, a list that starts with (or continues after a
  comma with) a word that is neither a code nor a rule name, a `TL` code or
  a name that is no tapelint rule. Its valid items still suppress; an
  invalid one suppresses nothing.
* A directive applies to a diagnostic whose primary range starts on its line,
  or, when that line is part of a statement spanning several lines, on the
  statement's first or last line: formatters move trailing comments to the
  closing bracket, and the first line is where a reader looks.
* `# tapelint: skip-file` counts only on a line of its own, starting at
  column 0 (a module-level comment), anywhere in the file.
* TL900 (parse error) cannot be suppressed by a line comment (comments of a
  file that does not parse cannot be trusted); use `skip-file`, `ignore` or
  `per-file-ignores`.
* With `--report-unused-suppressions` (TL901), a directive that suppresses
  nothing is reported, naming the codes that suppressed nothing, codes of no
  tapelint rule, and rules that are not enabled. A bare `# noqa` is never
  reported: it may be there for another tool. TL901 carries a safe fix that
  removes the unused codes (or the whole directive).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, replace

from tapelint.diagnostics import (
    Diagnostic,
    Edit,
    FileResult,
    FileWarning,
    Fix,
    FixKind,
    Position,
    Range,
    Safety,
    Semantics,
)
from tapelint.files import line_texts
from tapelint.lint import lint_source
from tapelint.rules import resolve
from tapelint.rules.tl901_unused_suppression import UnusedSuppression
from tapelint.settings import Settings

_ANY_DIRECTIVE = re.compile(r"noqa|tapelint", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?![\w-])(?P<colon>:[ \t]*(?P<list>[^#]*))?", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][\w-]*")
_SEPARATOR = re.compile(r"[\s,]*")
_CODE = re.compile(r"^[A-Z]+[0-9]+$", re.IGNORECASE)
_EXAMPLE = "e.g. `# noqa: TL001, tracked-accumulation`"
_IGNORE = re.compile(r"#\s*tapelint:\s*ignore\b(?:\[(?P<rules>[^\]]*)\])?", re.IGNORECASE)
_SKIP_FILE = re.compile(r"#\s*tapelint:\s*skip-file\b", re.IGNORECASE)
_SKIP_FILE_WORD = re.compile("skip-file", re.IGNORECASE)
_OUR_CODE = re.compile(r"^TL\d+$", re.IGNORECASE)
_PARSE_ERROR = "TL900"


@dataclass(frozen=True)
class Directive:
    """One suppression comment. `rules` None means every rule (bare)."""

    line: int  # 1-based
    column: int  # 0-based start of the directive in its line
    end_column: int
    kind: str  # "noqa" or "tapelint"
    rules: tuple[str, ...] | None  # our codes/names as written
    foreign: tuple[str, ...] = ()  # other tools' codes in a `# noqa`
    comment_start: int = 0  # column of the comment's `#`
    problem: str | None = None  # why the directive is invalid, if it is

    def codes(self) -> frozenset[str] | None:
        if self.rules is None:
            return None
        return frozenset(rule.code for rule in map(resolve, self.rules) if rule is not None)


@dataclass(frozen=True)
class Scan:
    """Every directive of a file, and the multi-line statements' bounds."""

    directives: tuple[Directive, ...] = ()
    skip_file: bool = False
    # (first, last) line of each statement that spans several lines
    statements: tuple[tuple[int, int], ...] = ()

    def warnings(self, path: str) -> tuple[FileWarning, ...]:
        return tuple(
            FileWarning(path, Position(d.line, d.column), f"invalid `{d.kind}` directive: {d.problem}")
            for d in self.directives
            if d.problem is not None
        )

    def candidate_lines(self, line: int) -> tuple[int, ...]:
        for first, last in self.statements:
            if first <= line <= last:
                return tuple(dict.fromkeys((line, first, last)))
        return (line,)


def scan(source: str) -> Scan:
    """Find the directives. Cheap when the text names none (most files)."""
    if not _ANY_DIRECTIVE.search(source):
        return Scan()
    lines = line_texts(source)
    directives: list[Directive] = []
    statements: list[tuple[int, int]] = []
    skip_file = False
    scanned_to = 0
    statement_start: int | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, (row, column) = token.type, token.start
            scanned_to = token.end[0]
            if kind == tokenize.COMMENT:
                skip_file |= column == 0 and bool(_SKIP_FILE.match(token.string))
                directives += _directives(token.string, row, column)
            elif kind == tokenize.NEWLINE:
                if statement_start is not None and statement_start < row:
                    statements.append((statement_start, row))
                statement_start = None
            elif (kind not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
                  and statement_start is None):
                statement_start = row
    except (tokenize.TokenError, SyntaxError):
        # The rest of a file that does not tokenize: comments found line by line.
        for row in range(scanned_to + 1, len(lines) + 1):
            hash_at = lines[row - 1].find("#")
            if hash_at >= 0:
                comment = lines[row - 1][hash_at:]
                skip_file |= hash_at == 0 and bool(_SKIP_FILE.match(comment))
                directives += _directives(comment, row, hash_at)
    return Scan(tuple(directives), skip_file, tuple(statements))


def _directives(comment: str, row: int, column: int) -> list[Directive]:
    found: list[Directive] = []
    for match in _NOQA.finditer(comment):
        start, end = column + match.start(), column + match.end()
        if not match["colon"]:
            found.append(Directive(row, start, end, "noqa", None, (), column))
            continue
        items, length, problem = _noqa_list(match["list"])
        ours = tuple(i for i in items if _is_ours(i))
        foreign = tuple(i for i in items if not _is_ours(i))
        if not ours and problem is None:
            continue  # only other tools' codes: none of our business
        end = column + match.start("list") + length if length else end
        found.append(Directive(row, start, end, "noqa", ours, foreign, column, problem or _unknown(ours)))
    for match in _IGNORE.finditer(comment):
        start, end = column + match.start(), column + match.end()
        rules = None if match["rules"] is None else tuple(i for i in re.split(r"[\s,]+", match["rules"]) if i)
        found.append(Directive(row, start, end, "tapelint", rules or None, (), column, _unknown(rules or ())))
    return found


def _noqa_list(text: str) -> tuple[tuple[str, ...], int, str | None]:
    """The codes and names at the start of `text`, how many characters they
    take, and what makes the list invalid (None if nothing). A word that is
    neither a code nor a rule name ends the list (a remark follows) unless it
    comes first or right after a comma."""
    items: list[str] = []
    position, end, after_comma = 0, 0, True
    while (word := _WORD.match(text, position)) is not None:
        if not (_CODE.match(word[0]) or resolve(word[0]) is not None):
            if after_comma:
                return tuple(items), end, _not_an_item(word[0], first=not items)
            break
        items.append(word[0])
        end = word.end()
        separator = _SEPARATOR.match(text, end)
        assert separator is not None  # `*` matches the empty string
        after_comma = "," in separator[0]
        position = separator.end()
    if not items:
        return (), 0, f"expected a list of codes or rule names ({_EXAMPLE})"
    return tuple(items), end, None


def _not_an_item(word: str, first: bool) -> str:
    if "-" in word:
        return f"`{word}` is not a tapelint rule name (see `tapelint rules`)"
    if first:
        return f"expected a list of codes or rule names, not `{word}` ({_EXAMPLE})"
    return f"expected a code or rule name after `,`, not `{word}` ({_EXAMPLE})"


def _unknown(items: tuple[str, ...]) -> str | None:
    """Our codes and names that name no rule (`TL999`, a misspelt name)."""
    unknown = [item for item in items if resolve(item) is None]
    if not unknown:
        return None
    listed = ", ".join(f"`{item}`" for item in unknown)
    return f"{listed} {'is' if len(unknown) == 1 else 'are'} not a tapelint rule (see `tapelint rules`)"


def _is_ours(item: str) -> bool:
    return bool(_OUR_CODE.match(item)) or not _CODE.match(item)


def _may_be_invalid(source: str) -> bool:
    """Does the text (comments or not) hold a directive that would be
    invalid? Cheap, textual: a yes is confirmed by tokenizing (`scan`)."""
    for match in _NOQA.finditer(source):
        if match["colon"]:
            items, _, problem = _noqa_list(match["list"])
            if problem is not None or _unknown(tuple(i for i in items if _is_ours(i))):
                return True
    return any(
        _unknown(tuple(i for i in re.split(r"[\s,]+", match["rules"]) if i))
        for match in _IGNORE.finditer(source)
        if match["rules"] is not None
    )


def lint_module(source: str, path: str, settings: Settings) -> FileResult:
    """`lint_source` with the file's own suppressions honoured. The
    directives are looked for only when they can matter (tokenizing costs
    more than most files' whole lint, and many files carry other tools'
    `noqa`): when there is something to suppress, unused directives to
    report, or a `skip-file` to honour before linting at all."""
    result = None
    quiet = not _ANY_DIRECTIVE.search(source) or not _may_be_invalid(source)
    if not settings.report_unused_suppressions and not _SKIP_FILE_WORD.search(source) and quiet:
        result = lint_source(source, path, settings)
        if not result.diagnostics:
            return result
    found = scan(source)
    if found.skip_file:
        return FileResult(path)
    result = apply(result or lint_source(source, path, settings), found, source, settings)
    warnings = found.warnings(path)
    return replace(result, warnings=result.warnings + warnings) if warnings else result


def apply(result: FileResult, found: Scan, source: str, settings: Settings) -> FileResult:
    """Drop suppressed diagnostics; add TL901 for unused directives if asked."""
    if not found.directives:
        return result
    by_line: dict[int, list[Directive]] = {}
    for directive in found.directives:
        by_line.setdefault(directive.line, []).append(directive)
    used: dict[Directive, set[str]] = {d: set() for d in found.directives}
    kept: list[Diagnostic] = []
    for diagnostic in result.diagnostics:
        suppressor = _suppressor(diagnostic, found, by_line)
        if suppressor is None:
            kept.append(diagnostic)
        else:
            used[suppressor].add(diagnostic.code)
    if settings.report_unused_suppressions and settings.enabled(UnusedSuppression.code):
        lines = line_texts(source)
        unused = (_unused(directive, codes, lines, result.path, settings) for directive, codes in used.items())
        kept += [diagnostic for diagnostic in unused if diagnostic is not None]
        kept.sort(key=lambda d: d.sort_key)
    return replace(result, diagnostics=tuple(kept))


def _suppressor(diagnostic: Diagnostic, found: Scan, by_line: dict[int, list[Directive]]) -> Directive | None:
    if diagnostic.code == _PARSE_ERROR:
        return None
    for line in found.candidate_lines(diagnostic.range.start.line):
        for directive in by_line.get(line, ()):
            codes = directive.codes()
            if codes is None or diagnostic.code in codes:
                return directive
    return None


def _unused(directive: Directive, used: set[str], lines: list[str], path: str, settings: Settings) -> Diagnostic | None:
    if directive.rules is None:
        if directive.kind == "noqa" or used:
            return None
        problems = ["suppresses nothing"]
        keep: list[str] = []
    else:
        problems, keep = [], []
        for written in directive.rules:
            rule = resolve(written)
            if rule is None:
                problems.append(f"`{written}` is not a tapelint rule")
            elif rule.code in used:
                keep.append(written)
            elif not settings.enabled(rule.code):
                problems.append(f"{rule.code} is not enabled")
            else:
                problems.append(f"{rule.code} suppresses nothing here")
        if not problems:
            return None
    text = lines[directive.line - 1][directive.column:directive.end_column]
    where = Range.of(directive.line, directive.column, directive.line, directive.end_column)
    return Diagnostic(
        code=UnusedSuppression.code,
        name=UnusedSuppression.name,
        severity=UnusedSuppression.severity,
        message=f"unused suppression `{text}`: {'; '.join(problems)}",
        path=path,
        range=where,
        fails_under=(Semantics.TORCH, Semantics.STRICT),
        fixes=(_removal(directive, tuple(keep), lines),),
    )


def _removal(directive: Directive, keep: tuple[str, ...], lines: list[str]) -> Fix:
    """Rewrite the directive with only what is still used, or delete it without
    turning the rest of the comment into code."""
    kept = keep + directive.foreign
    if kept:
        listed = ", ".join(kept)
        new_text = f"# noqa: {listed}" if directive.kind == "noqa" else f"# tapelint: ignore[{listed}]"
        edit = Edit(Range.of(directive.line, directive.column, directive.line, directive.end_column), new_text)
        return Fix(FixKind.REMOVE, Safety.SAFE, f"keep only `{new_text}`", (edit,))
    line = lines[directive.line - 1]
    before, after = line[:directive.column], line[directive.end_column:]
    start, end, new_text = directive.column, directive.end_column, ""
    if not after.strip():
        start = len(before.rstrip())  # the spaces before it go too
    elif directive.column == directive.comment_start and not after.lstrip().startswith("#"):
        new_text = "#"  # `# noqa: TL001 because ...` keeps `# because ...`
    else:
        end += len(after) - len(after.lstrip())
    edit = Edit(Range.of(directive.line, start, directive.line, end), new_text)
    return Fix(FixKind.REMOVE, Safety.SAFE, "remove the unused suppression", (edit,))
