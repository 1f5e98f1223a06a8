"""Inline suppressions: `# noqa`, `# tapelint: ignore[...]`, `# tapelint: skip-file`.

    loss_sum += loss  # noqa: TL003
    loss_sum += loss  # tapelint: ignore[TL003, tracked-accumulation]
    loss_sum += loss  # noqa             (every rule, as in ruff and flake8)
    loss_sum += loss  # tapelint: ignore (every rule)
    # tapelint: skip-file                (the file is not analysed at all)

Decisions (ruff's unless said otherwise):

* `# noqa` takes codes only (`TL001`), comma- and/or space-separated, case
  insensitive, so flake8 and ruff still read the same comment; codes of other
  tools (`E501`) are left alone. `# noqa:` followed by no code list is
  malformed and suppresses nothing (as in ruff; flake8 would read it as a
  bare `# noqa`). `# tapelint: ignore[...]` takes codes or
  kebab-case names. Several directives may share one comment
  (`# noqa: E501  # tapelint: ignore[TL001]`).
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

from tapelint.diagnostics import Diagnostic, Edit, Fix, FileResult, FixKind, Range, Safety, Semantics
from tapelint.lint import lint_source
from tapelint.rules import resolve
from tapelint.rules.tl901_unused_suppression import UnusedSuppression
from tapelint.settings import Settings

_ANY_DIRECTIVE = re.compile(r"noqa|tapelint", re.IGNORECASE)
_NOQA = re.compile(
    r"#\s*noqa(?![\w-])(?P<colon>:\s?(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)?)?", re.IGNORECASE
)
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

    def candidate_lines(self, line: int) -> tuple[int, ...]:
        for first, last in self.statements:
            if first <= line <= last:
                return tuple(dict.fromkeys((line, first, last)))
        return (line,)


def scan(source: str) -> Scan:
    """Find the directives. Cheap when the text names none (most files)."""
    if not _ANY_DIRECTIVE.search(source):
        return Scan()
    lines = source.splitlines()
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
            elif kind not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                if statement_start is None:
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
    for pattern, kind in ((_NOQA, "noqa"), (_IGNORE, "tapelint")):
        for match in pattern.finditer(comment):
            start, end = column + match.start(), column + match.end()
            if kind == "noqa":
                if match["colon"] and not match["codes"]:
                    continue  # `# noqa: <not a code>`: malformed, suppresses nothing (ruff)
                items = re.split(r"[\s,]+", match["codes"]) if match["codes"] else None
                ours = None if items is None else tuple(i for i in items if _OUR_CODE.match(i))
                foreign = () if items is None else tuple(i for i in items if not _OUR_CODE.match(i))
                if ours == ():
                    continue  # only other tools' codes: none of our business
                found.append(Directive(row, start, end, kind, ours, foreign, column))
            else:
                items = None if match["rules"] is None else tuple(i for i in re.split(r"[\s,]+", match["rules"]) if i)
                found.append(Directive(row, start, end, kind, items or None, (), column))
    return found


def lint_module(source: str, path: str, settings: Settings) -> FileResult:
    """`lint_source` with the file's own suppressions honoured. The
    directives are looked for only when they can matter (tokenizing costs
    more than most files' whole lint, and many files carry other tools'
    `noqa`): when there is something to suppress, unused directives to
    report, or a `skip-file` to honour before linting at all."""
    result = None
    if not settings.report_unused_suppressions and not _SKIP_FILE_WORD.search(source):
        result = lint_source(source, path, settings)
        if not result.diagnostics:
            return result
    found = scan(source)
    if found.skip_file:
        return FileResult(path)
    return apply(result or lint_source(source, path, settings), found, source, settings)


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
        directive = _suppressor(diagnostic, found, by_line)
        if directive is None:
            kept.append(diagnostic)
        else:
            used[directive].add(diagnostic.code)
    if settings.report_unused_suppressions and settings.enabled(UnusedSuppression.code):
        lines = source.splitlines()
        kept += [d for directive, codes in used.items() if (d := _unused(directive, codes, lines, result.path, settings))]
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
        keep: tuple[str, ...] = ()
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
        new_text = f"# noqa: {', '.join(kept)}" if directive.kind == "noqa" else f"# tapelint: ignore[{', '.join(kept)}]"
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
