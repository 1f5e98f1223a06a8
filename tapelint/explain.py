"""`tapelint explain`: start from the error message the user actually has.

Paste a PyTorch or burn error, or a whole traceback, and tapelint

1. recognises the error: PyTorch's "backward through the graph a second
   time", burn's "graph tape has already been consumed at NodeId(N)", or
   PyTorch's "modified by an inplace operation";
2. names the rules whose hazards raise it;
3. reads the traceback's frames (`File "x.py", line N` and IPython's
   `File ~/x.py:N`), including the forward frames that anomaly mode prints
   ("Traceback of forward call that caused the error"), lints every file
   they name that exists here (not library files: site-packages and the
   standard library are not the user's code), and points at the
   diagnostics whose failing backward (or, for a forward frame, whose
   definition) is on a line of the traceback, else at the closest ones;
4. says why the message's own advice, `retain_graph=True`, is usually the
   wrong fix.

The files are linted under the semantics of the error: torch for PyTorch's
messages, strict for burn's; the in-place error is usually a graph that
`retain_graph=True` kept alive across `optimizer.step()`, a reuse only the
strict profile still reports, so it is linted under strict too, and the
lines holding `retain_graph=True` are listed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import sysconfig
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tapelint.config import ConfigError, Resolver
from tapelint.diagnostics import Diagnostic, FileError, Role, Semantics
from tapelint.rules import BY_CODE
from tapelint.runner import lint_one
from tapelint.settings import Settings

SECOND_BACKWARD = "second-backward"
TAPE_CONSUMED = "tape-consumed"
INPLACE = "inplace"
# How many diagnostics to show when none is on a traceback line.
CLOSEST = 3


@dataclass(frozen=True)
class ErrorKind:
    """A graph-lifetime error tapelint knows, and what it means."""

    key: str
    title: str
    pattern: re.Pattern[str]
    semantics: Semantics
    rules: tuple[str, ...]
    meaning: str
    retain_graph_question: str
    why_not_retain_graph: str


KINDS: tuple[ErrorKind, ...] = (
    ErrorKind(
        key=SECOND_BACKWARD,
        title="PyTorch: Trying to backward through the graph a second time",
        pattern=re.compile(r"Trying to backward through the graph a second time"),
        semantics=Semantics.TORCH,
        rules=("TL001", "TL002", "TL004", "TL005", "TL003"),
        meaning=(
            "A backward walked into a part of the graph whose saved tensors an earlier backward (or"
            " autograd.grad) had already freed. Something computed once is reached by two backwards:"
            " a value hoisted out of the training loop, a value shared by two losses backwarded one"
            " after the other, the same loss backwarded twice, state carried from one iteration into"
            " the next, or a running total that is backwarded again."
        ),
        retain_graph_question="Why not `retain_graph=True`, as the message suggests?",
        why_not_retain_graph=(
            "`retain_graph=True` makes this message go away, but rarely fixes the bug. It keeps the"
            " graph alive: with state carried across steps, memory grows with every step and each"
            " backward walks all earlier steps again. A part that is walked again adds its gradients"
            " once more (gradients accumulate, they are never overwritten), computed from the values of"
            " an earlier step, silently. Once `optimizer.step()` has changed the parameters in place,"
            " the kept graph fails anyway, with \"modified by an inplace operation\". A strict tape"
            " (burn) has no retain_graph at all. Instead: `detach()` the value that is carried or"
            " hoisted (it then gets no gradient), compute it inside the loop, or add the losses and"
            " call backward once (bit-identical gradients, one walk of the shared part). Keep"
            " `retain_graph=True` for the rare code that means to walk the same graph twice."
        ),
    ),
    ErrorKind(
        key=TAPE_CONSUMED,
        title="burn: graph tape has already been consumed",
        pattern=re.compile(r"graph tape has already been consumed at NodeId\((?P<node>\d+)\)"),
        semantics=Semantics.STRICT,
        rules=("TL001", "TL002", "TL004", "TL005", "TL006", "TL003"),
        meaning=(
            "A backward reached a node whose step an earlier backward already consumed. On a strict"
            " tape every reuse of a non-leaf node fails, including the ones PyTorch lets pass (nodes"
            " that saved nothing, such as `add`, and graphs kept with `retain_graph=True`). Node ids"
            " count from 0 over every tensor created on the autodiff device, leaves included, in"
            " creation order: NodeId({node}) is the {ordinal} tensor the program created."
        ),
        retain_graph_question="What about `retain_graph=True`, as in PyTorch?",
        why_not_retain_graph=(
            "burn has no `retain_graph`, so the PyTorch habit of adding `retain_graph=True` has no"
            " equivalent here, and code that relied on it must change. As the message says: combine"
            " the losses before one backward, or recompute the forward pass; `detach()` only where the"
            " gradient through the earlier computation is meant to be cut."
        ),
    ),
    ErrorKind(
        key=INPLACE,
        title="PyTorch: a variable needed for gradient computation has been modified by an inplace operation",
        pattern=re.compile(
            r"modified by an inplace operation(?:: \[(?P<tensor>[^\]]*\]?)\], which is output \d+ of"
            r" (?P<op>\w+), is at version (?P<version>\d+); expected version (?P<expected>\d+))?"
        ),
        semantics=Semantics.STRICT,
        rules=("TL007", "TL005", "TL001", "TL002", "TL006"),
        meaning=(
            "A backward needed a tensor that was changed in place after the forward saved it{detail}."
            " In a training loop this is most often a graph kept alive with `retain_graph=True`"
            " across `optimizer.step()`, or a loss built before a step and backwarded after it: the"
            " step updates the parameters in place, and the backward walks the old graph that saved"
            " them (TL007, stale-graph). Otherwise it is an in-place operation"
            " (`x += ...`, `relu_`, `inplace=True`) on a tensor a backward still needs; replace it by"
            " its out-of-place form (that case is not a hazard tapelint reports)."
        ),
        retain_graph_question="Why not `retain_graph=True`?",
        why_not_retain_graph=(
            "This error is frequently what `retain_graph=True` turns into: the message of the first"
            " error suggested keeping the graph, and the kept graph now refers to parameters the"
            " optimizer has changed. The graph should not be walked again at all: `detach()` the state"
            " carried from one step into the next (truncated BPTT's \"repackage\"), compute hoisted"
            " values inside the loop, or add the losses and backward once before `optimizer.step()`."
        ),
    ),
)


@dataclass(frozen=True)
class Recognized:
    kind: ErrorKind
    message: str  # the error's line as pasted
    node_id: int | None = None

    @property
    def meaning(self) -> str:
        if self.kind.key == TAPE_CONSUMED:
            node = self.node_id if self.node_id is not None else "N"
            ordinal = _ordinal(self.node_id + 1) if self.node_id is not None else "(N+1)-th"
            return self.kind.meaning.format(node=node, ordinal=ordinal)
        if self.kind.key == INPLACE:
            match = self.kind.pattern.search(self.message)
            detail = ""
            if match and match.group("op"):
                detail = (f" (here a `{match.group('tensor')}`, output of `{match.group('op')}`, saved at"
                          f" version {match.group('expected')} and now at version {match.group('version')})")
            return self.kind.meaning.format(detail=detail)
        return self.kind.meaning


@dataclass(frozen=True)
class Frame:
    """One `File ..., line N` of the pasted text. `forward`: printed by
    anomaly mode as where the node that failed was created."""

    path: str
    line: int
    function: str | None
    forward: bool = False


@dataclass(frozen=True)
class Match:
    diagnostic: Diagnostic
    on_traceback: bool  # a line of the traceback is its failing backward or its definition
    distance: int  # lines from the nearest traceback line in its file
    reason: str


@dataclass(frozen=True)
class Explanation:
    recognized: Recognized | None
    frames: tuple[Frame, ...]
    checked: tuple[str, ...]  # the files linted, as displayed
    skipped: tuple[str, ...]  # named by the traceback but not linted (library code, missing)
    matches: tuple[Match, ...]
    retain_graph_lines: tuple[tuple[str, int], ...]  # (path, line) holding retain_graph=True
    errors: tuple[FileError, ...] = ()


_PYTHON_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+?))?\s*$')
# IPython 8: `File ~/project/train.py:14, in train()`
_IPYTHON_FRAME = re.compile(r"^\s*File (?P<path>[^\s\"<][^:\"]*\.py):(?P<line>\d+)(?:, in (?P<function>.+?))?\s*$")
_FORWARD_START = "Traceback of forward call that caused the error"
_FORWARD_END = re.compile(r"^\s*\(Triggered internally at|^Traceback \(most recent call last\)")
_RETAIN_GRAPH = re.compile(r"\bretain_graph\s*=\s*True\b")


def recognize(text: str) -> Recognized | None:
    """The first known error in `text` (the last line that names one wins:
    in a chained traceback, the final error is the one raised)."""
    found: Recognized | None = None
    for line in text.splitlines():
        for kind in KINDS:
            match = kind.pattern.search(line)
            if match:
                node = match.groupdict().get("node")
                found = Recognized(kind, line.strip(), int(node) if node is not None else None)
    return found


def parse_frames(text: str) -> tuple[Frame, ...]:
    frames: list[Frame] = []
    forward = False
    for line in text.splitlines():
        if _FORWARD_START in line:
            forward = True
            continue
        if forward and _FORWARD_END.search(line):
            forward = False
        match = _PYTHON_FRAME.match(line) or _IPYTHON_FRAME.match(line)
        if match:
            path = os.path.expanduser(match.group("path"))
            frames.append(Frame(path, int(match.group("line")), match.group("function"), forward))
    return tuple(frames)


def explain(text: str, settings_for: Callable[[str], Settings] = lambda path: Settings()) -> Explanation:
    """Recognise the error in `text`, lint the user files its traceback
    names (each with `settings_for(path)`, under the error's semantics), and
    match the diagnostics against the traceback's lines."""
    recognized = recognize(text)
    frames = parse_frames(text)
    files, skipped = _user_files(frames)
    checked: list[str] = []
    errors: list[FileError] = []
    matches: list[Match] = []
    retain_lines: list[tuple[str, int]] = []
    for real, shown in files:
        settings = settings_for(shown)
        if recognized is not None:
            settings = replace(settings, semantics=recognized.kind.semantics)
        result = lint_one(shown, settings).result
        errors.extend(result.errors)
        if result.errors:
            continue
        checked.append(shown)
        in_file = [f for f in frames if _real(f.path) == real]
        matches.extend(_match(d, in_file) for d in result.diagnostics if d.code != "TL900")
        if recognized is not None and recognized.kind.key == INPLACE:
            retain_lines.extend((shown, n) for n in _retain_graph_lines(shown))
    return Explanation(
        recognized=recognized,
        frames=frames,
        checked=tuple(checked),
        skipped=tuple(skipped),
        matches=_best(matches),
        retain_graph_lines=tuple(retain_lines),
        errors=tuple(errors),
    )


def _user_files(frames: Iterable[Frame]) -> tuple[list[tuple[str, str]], list[str]]:
    """(real path, displayed path) of each existing user file, in order of
    first mention; and the named paths left out."""
    files: list[tuple[str, str]] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for frame in frames:
        real = _real(frame.path)
        if real in seen:
            continue
        seen.add(real)
        if not os.path.isfile(frame.path) or _is_library(real):
            if not frame.path.startswith("<"):  # <string>, <frozen runpy>, <ipython-input-...>
                skipped.append(frame.path)
            continue
        files.append((real, _display(frame.path)))
    return files, skipped


def _match(diagnostic: Diagnostic, frames: Sequence[Frame]) -> Match:
    failing = {f.line for f in frames if not f.forward}
    created = {f.line for f in frames if f.forward}
    fails_at = _fails_at_line(diagnostic)
    definition = _definition_line(diagnostic)
    reasons = []
    if fails_at is not None and fails_at in failing:
        reasons.append(f"the traceback fails at line {fails_at}, the backward it predicts to fail")
    if definition is not None and definition in created:
        reasons.append(f"anomaly mode names line {definition}, where it creates the reused value")
    lines = _lines_of(diagnostic)
    trace_lines = failing | created
    distance = min((abs(a - b) for a in lines for b in trace_lines), default=1 << 30)
    if reasons:
        return Match(diagnostic, True, 0, "; ".join(reasons))
    return Match(diagnostic, False, distance, f"{distance} line(s) from the traceback")


def _best(matches: list[Match]) -> tuple[Match, ...]:
    on_traceback = [m for m in matches if m.on_traceback]
    if on_traceback:
        return tuple(on_traceback)
    return tuple(sorted(matches, key=lambda m: (m.distance, m.diagnostic.sort_key))[:CLOSEST])


def _fails_at_line(diagnostic: Diagnostic) -> int | None:
    related = diagnostic.related_of(Role.FAILS_AT)
    if related is not None:
        return related.range.start.line
    # TL002/TL004 put the failing backward in the primary range (`docs/rules.md`).
    return diagnostic.range.start.line if diagnostic.code in ("TL002", "TL004") else None


def _definition_line(diagnostic: Diagnostic) -> int | None:
    related = diagnostic.related_of(Role.DEFINITION)
    if related is not None:
        return related.range.start.line
    return diagnostic.range.start.line if diagnostic.code in ("TL001", "TL005") else None


def _lines_of(diagnostic: Diagnostic) -> set[int]:
    lines = {diagnostic.range.start.line}
    lines.update(r.range.start.line for r in diagnostic.related if r.path == diagnostic.path)
    return lines


def _retain_graph_lines(path: str) -> list[int]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [n for n, line in enumerate(handle, 1) if _RETAIN_GRAPH.search(line.split("#", 1)[0])]
    except OSError:
        return []


def _is_library(real: str) -> bool:
    parts = real.replace(os.sep, "/").split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    stdlib = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}
    return any(real == root or real.startswith(root + os.sep) for root in stdlib)


def _real(path: str) -> str:
    return os.path.realpath(path)


def _display(path: str) -> str:
    """Relative to the working directory when inside it, as the user would type it."""
    relative = os.path.relpath(os.path.realpath(path), os.path.realpath(os.getcwd()))
    return path if relative.startswith("..") else relative


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# --- rendering ------------------------------------------------------------------


def render(explanation: Explanation) -> str:
    """The explanation as text for a terminal."""
    out: list[str] = []
    recognized = explanation.recognized
    if recognized is None:
        out.append("tapelint does not recognise a graph-lifetime error in this text.")
        out.append("It explains PyTorch's \"Trying to backward through the graph a second time\", PyTorch's"
                   " \"modified by an inplace operation\", and burn's \"graph tape has already been consumed\".")
    else:
        out += [f"error: {recognized.kind.title}", "", _wrap(recognized.meaning), "", "Likely rules:"]
        out += [f"  {code} {BY_CODE[code].name}: {BY_CODE[code].summary}" for code in recognized.kind.rules]
        out.append("")
    out += _render_findings(explanation)
    if recognized is not None:
        out += [recognized.kind.retain_graph_question, _wrap(recognized.kind.why_not_retain_graph)]
    return "\n".join(out).rstrip("\n") + "\n"


def _render_findings(explanation: Explanation) -> list[str]:
    out: list[str] = []
    if not explanation.frames:
        return ["No traceback frames in the text: paste the whole traceback, or run `tapelint check`"
                " on the training script.", ""]
    if not explanation.checked:
        named = ", ".join(explanation.skipped) or "none"
        return [f"None of the files the traceback names could be checked here (named: {named}).", ""]
    if explanation.recognized is not None:
        semantics = explanation.recognized.kind.semantics.value
        out.append(f"Checked under --semantics {semantics}: {', '.join(explanation.checked)}")
    else:
        out.append(f"Checked: {', '.join(explanation.checked)}")
    for error in explanation.errors:
        out.append(f"  {error.path}: error: {error.message}")
    matches = explanation.matches
    if not matches:
        out.append("tapelint finds no hazard in these files.")
    elif matches[0].on_traceback:
        out.append("These findings are on the lines of the traceback:")
    else:
        out.append("No finding is on a line of the traceback; the closest:")
    out.append("")
    for match in matches:
        out += _render_diagnostic(match)
    if explanation.retain_graph_lines:
        out.append("`retain_graph=True` keeps a graph alive past an optimizer step here:")
        out += [f"  {path}:{line}" for path, line in explanation.retain_graph_lines]
        out.append("")
    return out


def _render_diagnostic(match: Match) -> list[str]:
    d = match.diagnostic
    start = d.range.start
    out = [f"{d.path}:{start.line}:{start.column + 1}: {d.code} {d.message}", f"  = why here: {match.reason}"]
    out += [
        f"  = {r.role.value} {r.path}:{r.range.start.line}:{r.range.start.column + 1}: {r.message}"
        for r in d.related
        if (r.path, r.range) != (d.path, d.range)
    ]
    out += [f"  = help ({fix.safety.value}): {fix.description}" for fix in d.fixes]
    return out + [""]


def _wrap(text: str, width: int = 88) -> str:
    return textwrap.fill(text, width=width)


# --- command line -----------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "message", nargs="*", metavar="TEXT",
        help="the error message or traceback (default, or `-`: read it from standard input)",
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the error was recognised, 1 when it was not, 2 when no
    text was given or the configuration is broken."""
    if args.message and args.message != ["-"]:
        text = " ".join(args.message)
    else:
        if sys.stdin.isatty():
            print("Paste the error or traceback, then press Ctrl-D (Ctrl-Z Enter on Windows).", file=sys.stderr)
        text = sys.stdin.read()
    if not text.strip():
        print("tapelint: error: no error message given (pass it as an argument or on standard input)", file=sys.stderr)
        return 2
    resolver = Resolver()
    try:
        explanation = explain(text, resolver.settings_for)
    except ConfigError as exc:
        print(f"tapelint: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(explanation))
    return 0 if explanation.recognized is not None else 1
