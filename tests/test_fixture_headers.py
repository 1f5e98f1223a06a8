"""Every fixture has a well-formed header that follows the classification
conventions of rules.md (see fixtures/README.md, "Naming and counting").

Naming convention (how positives and negatives are counted):

* `tlNNN_<what>.py` is a positive for TLNNN: it has at least one `expect:` line
  with that code (it may have one more, of any code).
* `neg_tlNNN[_tlMMM...]_<what>.py` is a negative context for each rule named in
  its prefix: it has no `expect:` line at all, so it must lint clean under both
  semantics.

A rule's positives are the fixtures with an `expect:` line of that code; its
negatives are the `neg_` fixtures whose prefix names it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from fixture_spec import (
    FIXTURES_DIR,
    NAME,
    Expect,
    FixtureHeaderError,
    FixtureSpec,
    Outcome,
    fixture_paths,
    parse_fixture,
)

RULES = ("TL001", "TL002", "TL003", "TL004", "TL005", "TL006", "TL007")
FAILING = {"TL001", "TL002", "TL004", "TL005"}  # a reuse that raises at run time
MIN_FIXTURES = 60
MIN_PER_DIRECTION = 3

PATHS = fixture_paths()


def _ids(paths):
    return [p.name for p in paths]


def _lines(spec: FixtureSpec) -> list[str]:
    return spec.path.read_text(encoding="utf-8").splitlines()


def _is_backward_call(text: str) -> bool:
    return "backward(" in text or "grad(" in text


def _function_around(lines: list[str], line: int) -> Optional[str]:
    """The name of the function (`def name(`) whose body holds 1-based `line`."""
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for text in reversed(lines[:line - 1]):
        found = re.match(r"(\s*)def (\w+)\(", text)
        if found and len(found.group(1)) < indent:
            return found.group(2)
    return None


def test_fixture_count():
    assert len(PATHS) >= MIN_FIXTURES, f"only {len(PATHS)} fixtures in {FIXTURES_DIR}"


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_header_parses(path: Path):
    spec = parse_fixture(path)
    assert spec.description


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_file_name_matches_declarations(path: Path):
    m = NAME.match(path.name)
    assert m, f"{path.name}: expected tlNNN_<what>.py or neg_tlNNN[_tlMMM...]_<what>.py"
    spec = parse_fixture(path)
    if m.group("pos"):
        code = m.group("pos").upper()
        assert any(e.code == code for e in spec.expects), f"{path.name} is named a {code} positive but expects no {code}"
        assert len(spec.expects) <= 2, "at most two diagnostics per fixture, so that each declaration is unambiguous"
    else:
        assert not spec.expects, f"{path.name} is named a negative but has expect lines"


def test_every_rule_has_positives_and_negatives():
    specs = [parse_fixture(p) for p in PATHS]
    positives = Counter(code for s in specs for code in {e.code for e in s.expects})
    negatives = Counter()
    for p in PATHS:
        m = NAME.match(p.name)
        if m and m.group("neg"):
            negatives.update(tok.upper() for tok in m.group("neg").strip("_").split("_"))
    for rule in RULES:
        assert positives[rule] >= MIN_PER_DIRECTION, f"{rule}: only {positives[rule]} positive fixtures"
        assert negatives[rule] >= MIN_PER_DIRECTION, f"{rule}: only {negatives[rule]} negative fixtures"
    # Both semantics must be exercised in both directions: some findings only fail on a strict tape.
    strict_only = [e for s in specs for e in s.expects if e.code in FAILING and e.profiles == ("strict",)]
    assert len(strict_only) >= 3, "need torch-vs-strict differences (findings reported only under strict)"


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_declarations_are_consistent(path: Path):
    """The header follows rules.md's conventions and agrees with itself."""
    spec = parse_fixture(path)
    lines = _lines(spec)

    def text(n: int) -> str:
        return lines[n - 1]

    failing = [e for e in spec.expects if e.code in FAILING]
    torch_failing = [e for e in failing if "torch" in e.profiles]

    for o, sem in ((spec.torch, "torch"), (spec.strict, "strict")):
        if o.kind == "fails":
            assert _is_backward_call(text(o.line)), f"{sem}: fails line {o.line} is not a backward/grad call"
            if o.node_line is not None:
                assert text(o.node_line).strip() and not text(o.node_line).lstrip().startswith("#")

    # Strict reports every reused non-leaf: a finding that fails under torch fails under strict too.
    for e in failing:
        assert "strict" in e.profiles, f"{e.code} {e.line}: a reuse that fails under torch also fails under strict"
        assert spec.strict.kind == "fails", f"{e.code} {e.line} declared but strict outcome is {spec.strict.kind}"
    # Under torch, a finding is reported iff the run fails.
    if torch_failing:
        assert spec.torch.kind == "fails", "a torch-profile TL001/2/4/5 needs 'torch: fails ...'"
    if spec.torch.kind == "fails":
        assert torch_failing, "torch fails but no torch-profile TL001/TL002/TL004/TL005 is expected"
    if failing and not torch_failing:
        assert spec.torch.kind in ("ok", "grows"), "a strict-only finding must run under torch"

    for e in spec.expects:
        line = text(e.line)
        if e.code in ("TL002", "TL004"):
            # primary = the failing backward call
            assert _is_backward_call(line), f"{e.code} {e.line}: primary must be the failing backward call"
            outcome = spec.torch if "torch" in e.profiles else spec.strict
            assert outcome.line == e.line, f"{e.code} {e.line}: the run must fail at the declared call"
        elif e.code in ("TL001", "TL005"):
            # primary = the definition of the reused value
            assert re.search(r"[^=!<>]=[^=]", line), f"{e.code} {e.line}: primary must be the defining assignment"
            if spec.torch.node_line is not None and spec.strict.node_line is not None and "torch" in e.profiles:
                assert spec.torch.node_line == spec.strict.node_line, "one missing node, two semantics"
        elif e.code == "TL003":
            # Retention is reported where it grows: a strict tape prunes what a backward consumed,
            # so a total of backwarded losses grows only under torch; an evaluation loop's grows in both.
            grows_in = tuple(p for p in ("torch", "strict") if getattr(spec, p).kind == "grows")
            assert e.profiles == grows_in, "TL003 is reported under exactly the semantics whose run grows"
            assert "+=" in line or re.search(r"\.(append|add_|sub_)\(", line) or re.search(r"(\w+) = \1 \+", line), (
                f"TL003 {e.line}: primary must be the accumulating statement"
            )
            if not torch_failing:
                assert spec.torch.kind == "grows", "TL003: PyTorch retention must grow"
        elif e.code == "TL007":
            # primary = the backward that walks the stale graph; PyTorch raises the in-place error there,
            # and a strict tape fails there too (its graph was consumed, or it checks the versions).
            # A backward inside a helper of this file (`self._update(opt, loss)`) is reported at the
            # call of the scope that runs both the step and it: PyTorch raises in the helper's body.
            # In a project, a backward in another file is reported (and raises, as far as this
            # file's frames go) at this file's call.
            raises = spec.torch.line
            other_file = raises == e.line and "projects" in path.parts
            if not _is_backward_call(line) and not other_file:
                helper = _function_around(lines, raises)
                assert helper is not None and re.search(rf"\b{helper}\(", line), (
                    f"TL007 {e.line}: primary must be the failing backward call, or a call of the helper running it")
                assert _is_backward_call(text(raises)), f"TL007: the in-place error at a backward, not {raises}"
            else:
                assert raises == e.line, f"TL007 {e.line}: PyTorch's in-place error there"
            assert e.profiles == ("torch", "strict"), "TL007 fails under both semantics"
            assert spec.torch.kind == "inplace", "TL007: PyTorch's in-place error"
            assert spec.strict.kind in ("fails", "inplace") and spec.strict.line == raises
        elif e.code == "TL006":
            assert e.profiles == ("strict",), "TL006 fails only on a strict tape, so only --semantics strict reports it"
            assert "retain_graph=True" in line, f"TL006 {e.line}: primary must be the retain_graph=True argument"
            assert spec.strict.kind == "fails", "TL006's code fails on a strict tape"
            if not torch_failing:
                assert spec.torch.kind == "ok", "retain_graph=True makes the torch run succeed"

    if spec.torch.kind == "grows":
        assert any(e.code == "TL003" for e in spec.expects) or any(
            e.code == "TL005" and e.profiles == ("strict",) for e in spec.expects
        ), "growing retention must be declared (TL003, or a carried value that only a strict tape rejects)"

    if spec.is_negative:
        assert spec.torch.kind == "ok", "a negative fixture must run cleanly under torch"
        if spec.strict.kind != "ok":
            # Judgement call: the linter trusts retain_graph/create_graph (analysis.md: a hazard needs a
            # non-retaining first walk); TL006 covers only the retains that adding the losses would replace.
            source = "\n".join(lines)
            assert spec.strict.kind == "fails"
            assert "retain_graph=True" in source or "create_graph=True" in source, (
                "a negative that fails on a strict tape must owe it to a needed retain_graph/create_graph"
            )


# --- the parser itself -------------------------------------------------------------------------

GOOD = """\
# fixture: a good header
# expect: TL001 7 torch strict
# expect: TL002 9 strict
# torch: fails 9 node 7
# strict: fails 9 node 7

x = 1
y = 2
z = x + y
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "case.py"
    p.write_text(text, encoding="utf-8")
    return p


def test_parser_reads_a_good_header(tmp_path):
    spec = parse_fixture(_write(tmp_path, GOOD))
    assert spec.description == "a good header"
    assert spec.expects == (Expect("TL001", 7, ("torch", "strict")), Expect("TL002", 9, ("strict",)))
    assert spec.torch == Outcome("fails", 9, 7)
    assert spec.strict == Outcome("fails", 9, 7)
    assert spec.header_lines == 5
    assert spec.expects_under("torch") == (Expect("TL001", 7, ("torch", "strict")),)


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("# fixture: a good header\n", "", 1, "'expect:' lines go after"),
        ("# fixture: a good header", "# fixtures: a good header", 1, "unknown header key"),
        ("# fixture: a good header", "#fixture: a good header", 1, "malformed header line"),
        ("# fixture: a good header", "# fixture:", 1, "malformed header line"),
        ("TL001 7 torch", "TL008 7 torch", 2, "unknown rule code"),
        ("TL001 7 torch", "TL001 70 torch", 2, "past the end"),
        ("TL001 7 torch", "TL001 0 torch", 2, "bad expect"),
        ("TL001 7 torch strict", "TL001 7 torch torch", 2, "listed twice"),
        ("TL001 7 torch strict", "TL001 7 burn", 2, "unknown semantics"),
        ("TL001 7 torch strict", "TL001 7", 2, "bad expect"),
        ("TL002 9 strict", "TL001 7 strict", 3, "duplicate expect"),
        ("TL002 9 strict", "TL002 6 strict", 6, "blank or comment line"),
        ("# torch: fails 9 node 7", "# torch: fail 9", 4, "bad outcome"),
        ("# torch: fails 9 node 7", "# torch: fails 99", 4, "past the end"),
        ("# torch: fails 9 node 7", "# torch: inplace", 4, "bad outcome"),
        ("# strict: fails 9 node 7\n\n", "\n\n", 4, "missing 'strict:' line"),
        ("# torch: fails 9 node 7\n# strict: fails 9 node 7", "# strict: ok\n# torch: ok", 4, "out of order"),
        ("# torch: fails 9 node 7\n", "# torch: ok\n# expect: TL003 8 torch\n", 5, "'expect:' lines go after"),
        ("node 7\n\nx = 1", "node 7\nx = 1\n", 6, "followed by a blank line"),
    ],
)
def test_parser_rejects_malformed_headers(tmp_path, old, new, line, message):
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(FixtureHeaderError) as info:
        parse_fixture(path)
    assert info.value.path == path
    assert info.value.line == line, str(info.value)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert message in str(info.value)


REPORT = GOOD.replace("# fixture: a good header\n", "# fixture: a report\n# source: https://example.org/t/1\n").replace(
    "# torch:", "# missed: the reason\n# torch:").replace(" 7", " 9").replace("TL002 9", "TL002 11").replace("fails 9", "fails 11")


def test_parser_reads_a_report_header(tmp_path):
    spec = parse_fixture(_write(tmp_path, REPORT))
    assert (spec.source, spec.missed) == ("https://example.org/t/1", "the reason")
    assert len(spec.expects) == 2 and spec.header_lines == 7
    assert (parse_fixture(_write(tmp_path, GOOD)).source, parse_fixture(_write(tmp_path, GOOD)).missed) == (None, None)


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("# source: https://example.org/t/1", "# source: example.org/t/1", 2, "https:// address"),
        ("# source: https://example.org/t/1\n", "# source: https://example.org/t/1\n# source: https://b.org\n", 3,
         "'source:' goes right after"),
        ("# fixture: a report\n# source: https://example.org/t/1", "# source: https://example.org/t/1\n# fixture: a report",
         1, "'source:' goes right after"),
        ("# missed: the reason\n# torch: fails 11 node 9", "# torch: fails 11 node 9\n# missed: the reason", 6,
         "'missed:' goes after"),
        ("# expect: TL002 11 strict\n# missed: the reason", "# missed: the reason\n# expect: TL002 11 strict", 5,
         "'expect:' lines go after"),
    ],
)
def test_parser_rejects_misplaced_report_lines(tmp_path, old, new, line, message):
    assert old in REPORT
    path = _write(tmp_path, REPORT.replace(old, new, 1))
    with pytest.raises(FixtureHeaderError) as info:
        parse_fixture(path)
    assert info.value.line == line, str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize("path", PATHS, ids=_ids(PATHS))
def test_a_fixture_is_never_a_known_miss(path: Path):
    """`missed:` belongs to the benchmark of real reports: a fixture declares
    what tapelint reports."""
    assert parse_fixture(path).missed is None


def test_parser_rejects_a_file_without_header(tmp_path):
    path = _write(tmp_path, "import torch\n")
    with pytest.raises(FixtureHeaderError, match="missing header"):
        parse_fixture(path)
