"""Pictures of the graph: `--graph` on `run`, `confirm` and `check`.

Two pictures, one drawing vocabulary (Graphviz DOT, always written; SVG or
PNG rendered when Graphviz is installed: the `graphviz` Python package, the
`graph` extra, or the `dot` program on PATH):

* the **recorded graph** at the failing backward (`tapelint run FILE --graph
  out.svg`, `tapelint confirm --graph DIR`), from `tapelint_engine.graph`:
  each node labelled by its operation and source line, with the tensors it
  saved; the part an earlier backward freed (torch) or consumed (strict)
  shaded; the node the failing backward needed highlighted; the two backward
  calls marked;
* the **abstract graph** of a static finding (`tapelint check FILE --graph
  DIR`): the definition, the loop, both backwards (or the accumulator; for
  TL007 the walk that kept the graph, if any, and the step that changed what
  it saved).

The static picture reads only the hazard fields the rules read (`value`,
`definition`, `loop`, `first_backward`, `fails_at`, TL003's
`accumulator`, TL007's `kept_by`, `step` and `module`), through `getattr`
where a kind has no such field.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tapelint.diagnostics import Diagnostic, FileResult, Role

RENDERED = ("svg", "png")
FREED = "#d9d9d9"
NEEDED = "#d62728"
_CODES = {"hoisted": "TL001", "shared": "TL002", "accumulation": "TL003", "repeated": "TL004",
          "carried": "TL005", "retain-to-combine": "TL006", "stale": "TL007"}
GRAPHVIZ_HINT = "install Graphviz (apt-get install graphviz, brew install graphviz) to get SVG and PNG"


class GraphError(Exception):
    """A picture that cannot be made (bad target, renderer failure); one line."""


# --- DOT ---------------------------------------------------------------------------


def quote(text: str) -> str:
    """A DOT string literal; newlines become label line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def attributes(**attrs: str | int | None) -> str:
    listed = " ".join(f"{name}={quote(str(value))}" for name, value in attrs.items() if value is not None)
    return f" [{listed}]" if listed else ""


@dataclass(frozen=True)
class Dot:
    """A digraph being written: statements in order."""

    lines: tuple[str, ...] = ()

    def node(self, key: str, **attrs: str | int | None) -> Dot:
        return Dot(self.lines + (f"  {quote(key)}{attributes(**attrs)};",))

    def edge(self, tail: str, head: str, **attrs: str | int | None) -> Dot:
        return Dot(self.lines + (f"  {quote(tail)} -> {quote(head)}{attributes(**attrs)};",))

    def cluster(self, key: str, label: str, members: Iterable[str]) -> Dot:
        inner = " ".join(f"{quote(m)};" for m in members)
        return Dot(self.lines + (f"  subgraph {quote('cluster_' + key)} {{ label={quote(label)}; "
                                 f"style=\"rounded,dashed\"; {inner} }}",))

    def text(self, title: str) -> str:
        header = (f"digraph tapelint {{\n  graph [label={quote(title)} labelloc=\"t\" fontname=\"Helvetica\"];\n"
                  "  node [fontname=\"Helvetica\" shape=\"box\" style=\"rounded\"];\n"
                  "  edge [fontname=\"Helvetica\" fontsize=\"10\"];\n")
        return header + "".join(line + "\n" for line in self.lines) + "}\n"


# --- the recorded graph ------------------------------------------------------------------


def runtime_dot(record: dict[str, Any], title: str) -> str:
    """The graph `tapelint_engine.graph` recorded at the failing backward."""
    strict = record.get("semantics") == "strict"
    released = "consumed" if strict else "freed"
    lines = record.get("backward_lines") or []
    failing = len(lines)
    first = next((i + 1 for i in range(failing - 2, -1, -1) if lines[i] == record.get("consumed_line")), None)
    dot = Dot()
    for leaf in record.get("leaves", ()):
        dot = dot.node(leaf["key"], label=f"leaf {tuple(leaf['shape'])}\n(AccumulateGrad)", shape="ellipse")
    needed = f"n{record.get('node_id')}"
    for node in record.get("nodes", ()):
        label = [f"{node['op']} (node {node['id']})", f"line {node['line']}" if node["line"] else "line ?"]
        if node["saved"]:
            label.append("saved: " + ", ".join(f"{_slot(s['slot'])} {tuple(s['shape'])}" for s in node["saved"]))
        elif node["saves"]:
            label.append(f"saved tensors {released}" if node["released_before"] else "saved tensors")
        else:
            label.append("saves nothing")
        attrs: dict[str, str | int | None] = {}
        if node["released_before"]:
            label.append(f"{released} by backward #{first}" if first else f"{released} by an earlier backward")
            attrs.update(style="rounded,filled", fillcolor=FREED)
        elif node["released"]:
            label.append(f"{released} by backward #{failing} before it failed")
            attrs.update(style="rounded,dashed")
        if node["key"] == needed:
            label.append("NEEDED by the failing backward")
            attrs.update(color=NEEDED, fontcolor=NEEDED, penwidth=3)
        dot = dot.node(node["key"], label="\n".join(label), **attrs)
        for parent in node["inputs"]:
            dot = dot.edge(parent, node["key"])
    where = f"backward #{failing}, line {lines[-1]}" if lines else f"the backward at line {record.get('line')}"
    dot = dot.node("failing", label=f"{where}\n{_headline(record.get('error') or '')}", shape="note",
                   color=NEEDED, fontcolor=NEEDED)
    for root in record.get("roots", ()):
        dot = dot.edge("failing", root, style="dashed", color=NEEDED, label="walks")
    if record.get("consumed_line") is not None:
        consumed = record["consumed_line"]
        name = f"backward #{first}, line {consumed}" if first else f"backward at line {consumed}"
        dot = dot.node("first", label=f"{name}\n{released} the shaded nodes", shape="note")
        if any(n["key"] == needed for n in record.get("nodes", ())):
            dot = dot.edge("first", needed, style="dashed", label=released)
    if record.get("left_out"):
        dot = dot.node("more", label=f"... {record['left_out']} more nodes not drawn", shape="plaintext")
    return dot.text(title)


def _slot(slot: str) -> str:
    """A saved slot as PyTorch would name it: an input position, or `result`."""
    return f"input {slot}" if slot.isdigit() else ("result" if slot == "out" else slot)


def _headline(error: str) -> str:
    """The error's first clause (PyTorch's message goes on for three sentences)."""
    head = re.split(r" \(|\. ", error, maxsplit=1)[0]
    return head if len(head) <= 70 else head[:67] + "..."


# --- the abstract graph of a finding -------------------------------------------------------


@dataclass(frozen=True)
class Place:
    line: int
    end_line: int
    text: str  # its code, first line, shortened


def static_dot(hazard: Any, place: Callable[[Any], Place], title: str) -> str:
    """The definition, the loop, and both backwards (or the accumulator) of one hazard."""
    definition = place(hazard.definition)
    dot = Dot().node("definition", label=f"{hazard.value}: {definition.text}\nline {definition.line}\n(definition)",
                     style="rounded,filled", fillcolor=FREED, color=NEEDED, penwidth=2)
    members = ["definition"]
    loop = getattr(hazard, "loop", None)
    loop_place = place(loop.node) if loop is not None else None
    step = getattr(hazard, "step", None)  # TL007: the graph is stale, not freed
    failing = ("walks it after the step: fails", "walked after the step") if step is not None else (
        "walks it again: fails", "walked again")
    for key, event, label, edge, attrs in (
        ("first", getattr(hazard, "first_backward", None), "frees its graph", "walked by", {}),
        ("first", getattr(hazard, "kept_by", None), "keeps its graph (retain_graph=True)", "walked by", {}),
        ("fails", getattr(hazard, "fails_at", None), *failing, {"color": NEEDED, "fontcolor": NEEDED}),
    ):
        if event is None:
            continue
        at = place(event.call)
        dot = dot.node(key, label=f"{at.text}\nline {at.line}\n{label}", shape="note", **attrs)
        dot = dot.edge("definition", key, label=edge, **attrs)
        members.append(key)
    if step is not None:
        at = place(step.call)
        dot = dot.node("step", label=f"{at.text}\nline {at.line}\nchanges `{hazard.module}`'s parameters in place",
                       shape="note", color=NEEDED, fontcolor=NEEDED)
        dot = dot.edge("step", "definition", label="modifies what it saved", color=NEEDED, style="dashed")
        members.append("step")
    accumulator = getattr(hazard, "accumulator", None)
    if accumulator is not None:
        at = place(accumulator)
        dot = dot.node("accumulator", label=f"{at.text}\nline {at.line}\nkeeps every iteration's graph",
                       shape="note", color=NEEDED, fontcolor=NEEDED)
        dot = dot.edge("definition", "accumulator", label="accumulated", color=NEEDED)
        members.append("accumulator")
    if loop_place is not None:
        inside = [key for key in members if key != "definition" or _within(definition, loop_place)]
        label = f"{getattr(loop, 'label', '') or 'loop'}, line {loop_place.line}"
        dot = dot.cluster("loop", label, inside)
    return dot.text(title)


def _within(inner: Place, outer: Place) -> bool:
    return outer.line <= inner.line <= outer.end_line


def write_static_graphs(results: Sequence[FileResult], directory: str,
                        source_of: Callable[[str], str | None], settings_of: Callable[[str], Any]) -> list[str]:
    """One picture per reported finding of each Python file, in `directory`;
    what was written, as lines for the user."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from tapelint.lint import analyze_module  # the analysis' entry point, wherever it lives

    messages: list[str] = []
    for result in results:
        reported = [d for d in result.diagnostics if d.code in _CODES.values()]
        source = source_of(result.path) if reported and result.path.endswith(".py") else None
        if source is None:
            continue
        module = cst.parse_module(source)
        located = analyze_module(module, settings_of(result.path), lines=source.count("\n") + 1, path=result.path)
        hazards = [found.hazard for found in located]
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

        def place(node: Any, positions: Any = positions, module: cst.Module = module) -> Place:
            where = positions[node]
            text = module.code_for_node(node).strip().splitlines()[0] if node is not None else ""
            return Place(where.start.line, where.end.line, text[:60] + ("..." if len(text) > 60 else ""))

        for hazard in hazards:
            code = _CODES.get(getattr(hazard.kind, "value", ""))
            diagnostic = _reported_as(hazard, code, place, reported)
            if diagnostic is None:
                continue
            stem = f"{safe_name(result.path)}-{code}-{diagnostic.range.start.line}"
            title = f"{result.path}:{diagnostic.range.start.line}: {code} {diagnostic.name}"
            messages.append(write(static_dot(hazard, place, title), os.path.join(directory, stem)))
    return messages


def _reported_as(hazard: Any, code: str | None, place: Callable[[Any], Place],
                 reported: Sequence[Diagnostic]) -> Diagnostic | None:
    """The diagnostic a hazard became, by code and definition line (a hazard
    the chosen semantics does not report has none)."""
    line = place(hazard.definition).line
    for diagnostic in reported:
        definition = diagnostic.related_of(Role.DEFINITION)
        at = definition.range.start.line if definition is not None else diagnostic.range.start.line
        if diagnostic.code == code and at == line:
            return diagnostic
    return None


# --- files ------------------------------------------------------------------------------------


def write(dot: str, base: str, formats: Sequence[str] = ("svg",)) -> str:
    """Write `base.dot`, and `base.<format>` for each format when Graphviz is
    available; a line saying what was written."""
    os.makedirs(os.path.dirname(base) or ".", exist_ok=True)
    written = [base + ".dot"]
    with open(written[0], "w", encoding="utf-8") as handle:
        handle.write(dot)
    missing = False
    for fmt in formats:
        image = render(dot, fmt)
        if image is None:
            missing = True
            continue
        with open(f"{base}.{fmt}", "wb") as handle:
            handle.write(image)
        written.append(f"{base}.{fmt}")
    return f"graph written to {', '.join(written)}" + (f" ({GRAPHVIZ_HINT})" if missing else "")


def render(dot: str, fmt: str) -> bytes | None:
    """The picture in `fmt`, or None when Graphviz is not installed. Raises
    `GraphError` when Graphviz rejects the DOT (a bug here)."""
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        try:
            picture: bytes = graphviz.Source(dot).pipe(format=fmt)
            return picture
        except graphviz.ExecutableNotFound:
            return None
        except graphviz.CalledProcessError as exc:
            raise GraphError(f"Graphviz rejected the graph: {_first_line(exc.stderr)}") from None
    program = shutil.which("dot")
    if program is None:
        return None
    done = subprocess.run([program, f"-T{fmt}"], input=dot.encode("utf-8"), capture_output=True, timeout=120)
    if done.returncode != 0:
        raise GraphError(f"Graphviz rejected the graph: {_first_line(done.stderr)}")
    return done.stdout


def _first_line(data: bytes | str | None) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")
    return (text.strip().splitlines() or ["(no message)"])[0]


def target(path: str) -> tuple[str, tuple[str, ...]]:
    """`out.svg` -> (`out`, ("svg",)); `out.dot` -> (`out`, ()). Raises `GraphError`."""
    base, suffix = os.path.splitext(path)
    fmt = suffix.lstrip(".").lower()
    if fmt == "dot":
        return base, ()
    if fmt in RENDERED:
        return base, (fmt,)
    raise GraphError(f"--graph {path}: name a .dot, .svg or .png file")


def safe_name(path: str) -> str:
    """A file name for a checked path (`src/train.py` -> `src_train`)."""
    return re.sub(r"[^\w.-]+", "_", os.path.splitext(path)[0]).strip("_.") or "graph"
