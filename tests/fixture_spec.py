"""Parser for the header that every fixture in `fixtures/` starts with.

The format is documented in `fixtures/README.md`::

    # fixture: one line saying what this program shows
    # expect: TL001 6 torch strict
    # expect: TL002 14 strict
    # torch: fails 10 node 6
    # strict: fails 10 node 6

The header is the run of comment lines at the top of the file, in exactly this
order: one `fixture`, any number of `expect`, one `torch`, one `strict`. It is
followed by a blank line. A real bug report rewritten as a program
(`benchmarks/reports/`) also says where the report is (`source`, right after
`fixture`) and, while tapelint does not report it as declared, why
(`missed`, right before `torch`). Anything else is an error: the parser never guesses,
because the headers are the oracle that the linter, the engine and the
real-PyTorch test are all checked against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FIXTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures"

PROFILES = ("torch", "strict")
KNOWN_CODES = ("TL001", "TL002", "TL003", "TL004", "TL005", "TL006", "TL007", "TL900")
OUTCOME_KINDS = ("ok", "grows", "fails", "inplace")

_HEADER_LINE = re.compile(r"^# (?P<key>[a-z]+): (?P<value>\S.*?)\s*$")
_EXPECT = re.compile(r"^(?P<code>TL\d{3}) (?P<line>[1-9]\d*)(?P<profiles>(?: [a-z]+)+)$")
_OUTCOME = re.compile(
    r"^(?:(?P<simple>ok|grows)"
    r"|fails (?P<fline>[1-9]\d*)(?: node (?P<node>[1-9]\d*))?"
    r"|inplace (?P<iline>[1-9]\d*))$"
)


class FixtureHeaderError(ValueError):
    """A malformed fixture header; the message starts with `path:line:`."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {message}")


@dataclass(frozen=True)
class Expect:
    """One declared diagnostic: `code` at 1-based `line`, reported under `profiles`."""

    code: str
    line: int
    profiles: tuple[str, ...]  # a non-empty subset of PROFILES, in PROFILES order


@dataclass(frozen=True)
class Outcome:
    """The declared runtime outcome under one semantics.

    kind: `ok`, `grows`, `fails` (second-backward / consumed-tape error raised
    by the call on `line`, optionally on the node created on `node_line`) or
    `inplace` (PyTorch's in-place modification error raised at `line`).
    """

    kind: str
    line: int | None = None
    node_line: int | None = None


@dataclass(frozen=True)
class FixtureSpec:
    path: Path
    description: str
    expects: tuple[Expect, ...]
    torch: Outcome
    strict: Outcome
    header_lines: int  # number of header comment lines (code starts after them)
    source: str | None = None  # the public report a program rewrites (benchmarks/reports/)
    missed: str | None = None  # why tapelint does not report it as declared, while it does not

    @property
    def is_negative(self) -> bool:
        return not self.expects

    def expects_under(self, profile: str) -> tuple[Expect, ...]:
        return tuple(e for e in self.expects if profile in e.profiles)


def parse_outcome(path: Path, lineno: int, value: str, n_lines: int) -> Outcome:
    m = _OUTCOME.match(value)
    if not m:
        raise FixtureHeaderError(
            path, lineno, f"bad outcome {value!r}: expected 'ok', 'grows', 'fails LINE [node LINE]' or 'inplace LINE'"
        )
    if m.group("simple"):
        return Outcome(m.group("simple"))
    if m.group("fline"):
        line = int(m.group("fline"))
        node = int(m.group("node")) if m.group("node") else None
        for what, n in (("line", line), ("node line", node)):
            if n is not None and n > n_lines:
                raise FixtureHeaderError(path, lineno, f"{what} {n} is past the end of the file ({n_lines} lines)")
        return Outcome("fails", line, node)
    line = int(m.group("iline"))
    if line > n_lines:
        raise FixtureHeaderError(path, lineno, f"line {line} is past the end of the file ({n_lines} lines)")
    return Outcome("inplace", line)


def _parse_expect(path: Path, lineno: int, value: str, n_lines: int) -> Expect:
    m = _EXPECT.match(value)
    if not m:
        raise FixtureHeaderError(path, lineno, f"bad expect {value!r}: expected 'CODE LINE PROFILE...'")
    code = m.group("code")
    if code not in KNOWN_CODES:
        raise FixtureHeaderError(path, lineno, f"unknown rule code {code}")
    line = int(m.group("line"))
    if line > n_lines:
        raise FixtureHeaderError(path, lineno, f"line {line} is past the end of the file ({n_lines} lines)")
    profiles = m.group("profiles").split()
    for p in profiles:
        if p not in PROFILES:
            raise FixtureHeaderError(path, lineno, f"unknown semantics {p!r} (expected torch and/or strict)")
    if len(set(profiles)) != len(profiles):
        raise FixtureHeaderError(path, lineno, "a semantics is listed twice")
    return Expect(code, line, tuple(p for p in PROFILES if p in profiles))


def parse_fixture(path: str | Path) -> FixtureSpec:
    """Parse and validate the header of one fixture file.

    Raises FixtureHeaderError (a ValueError) naming the file and line of the
    first problem.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FixtureHeaderError(path, 1, f"not UTF-8: {exc}") from None
    lines = text.splitlines()
    n_lines = len(lines)

    header: list[tuple[int, str, str]] = []
    for lineno, raw in enumerate(lines, 1):
        if not raw.startswith("#"):
            break
        m = _HEADER_LINE.match(raw)
        if not m:
            raise FixtureHeaderError(path, lineno, f"malformed header line {raw!r}: expected '# key: value'")
        header.append((lineno, m.group("key"), m.group("value")))
    if not header:
        raise FixtureHeaderError(path, 1, "missing header: the file must start with '# fixture: ...'")
    end = len(header)
    if end < n_lines and lines[end].strip():
        raise FixtureHeaderError(path, end + 1, "the header must be followed by a blank line")

    # Order: fixture, source?, expect*, missed?, torch, strict.
    description = None
    source = missed = None
    expects: list[Expect] = []
    outcomes: dict[str, Outcome] = {}
    for lineno, key, value in header:
        if key == "fixture":
            if description is not None or expects or outcomes:
                raise FixtureHeaderError(path, lineno, "'fixture:' must be the first header line, and only one")
            description = value
        elif key == "source":
            if description is None or source is not None or expects or outcomes:
                raise FixtureHeaderError(path, lineno, "'source:' goes right after 'fixture:', once")
            if not value.startswith("https://"):
                raise FixtureHeaderError(path, lineno, f"'source:' is the report's https:// address, not {value!r}")
            source = value
        elif key == "missed":
            if description is None or missed is not None or outcomes:
                raise FixtureHeaderError(path, lineno, "'missed:' goes after the 'expect:' lines and before 'torch:', once")
            missed = value
        elif key == "expect":
            if description is None or outcomes or missed is not None:
                raise FixtureHeaderError(path, lineno, "'expect:' lines go after 'fixture:' and before 'torch:'")
            e = _parse_expect(path, lineno, value, n_lines)
            if any((o.code, o.line) == (e.code, e.line) for o in expects):
                raise FixtureHeaderError(path, lineno, f"duplicate expect {e.code} {e.line}")
            expects.append(e)
        elif key in PROFILES:
            wanted = "torch" if not outcomes else "strict" if list(outcomes) == ["torch"] else None
            if description is None or key != wanted:
                raise FixtureHeaderError(path, lineno, f"'{key}:' out of order (expected fixture, expect..., torch, strict)")
            outcomes[key] = parse_outcome(path, lineno, value, n_lines)
        else:
            raise FixtureHeaderError(path, lineno, f"unknown header key {key!r}")
    if description is None:
        raise FixtureHeaderError(path, 1, "missing 'fixture:' line")
    for key in PROFILES:
        if key not in outcomes:
            raise FixtureHeaderError(path, header[-1][0], f"missing '{key}:' line")

    for e in expects:
        if not lines[e.line - 1].strip() or lines[e.line - 1].lstrip().startswith("#"):
            raise FixtureHeaderError(path, e.line, f"{e.code} points at a blank or comment line")
    return FixtureSpec(
        path=path,
        description=description,
        expects=tuple(expects),
        torch=outcomes["torch"],
        strict=outcomes["strict"],
        header_lines=end,
        source=source,
        missed=missed,
    )


REPORTS_DIR = FIXTURES_DIR.parent / "benchmarks" / "reports"
# A fixture's (and a report's) file name: a positive of one rule, or a negative of one or more.
NAME = re.compile(r"^(?:(?P<pos>tl00[1-7])|neg(?P<neg>(?:_tl00[1-7])+))_[a-z0-9]+(?:_[a-z0-9]+)*\.py$")


def fixture_paths(directory: Path = FIXTURES_DIR) -> list[Path]:
    return sorted(p for p in directory.glob("*.py") if p.is_file())


def project_fixture_paths(directory: Path = FIXTURES_DIR / "projects") -> list[Path]:
    """The file that reports in each multi-file fixture project (a folder
    under `fixtures/projects/`): the one that starts with the header."""
    return sorted(p for p in directory.glob("*/**/*.py") if p.read_text(encoding="utf-8").startswith("# fixture:"))


def load_fixtures(directory: Path = FIXTURES_DIR) -> list[FixtureSpec]:
    return [parse_fixture(p) for p in fixture_paths(directory)]
