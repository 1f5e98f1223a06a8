"""A strict parser of the DOT subset tapelint writes (tests only): a
`digraph` of attribute statements, node and edge statements with quoted IDs
and attribute lists, and clusters. Anything else is an error, as is an edge
to a node never declared or a node declared twice."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<word>[A-Za-z_][\w]*)|(?P<arrow>->)|(?P<punct>[{}\[\];=,]))')


class DotError(ValueError):
    pass


@dataclass
class Graph:
    name: str
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)  # graph/node/edge defaults
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, tuple[dict[str, str], list[str]]] = field(default_factory=dict)


def _unquote(token: str) -> str:
    """DOT's one string escape is `\\"`; every other backslash stays (see `shown`)."""
    return token[1:-1].replace('\\"', '"') if token.startswith('"') else token


def shown(label: str) -> str:
    """What Graphviz shows for a label: `\\\\` is a backslash, `\\n` (`\\l`, `\\r`) a line break."""
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] in "nlr" else m[1], label)


def _tokens(text: str) -> list[str]:
    out, position = [], 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise DotError(f"unexpected text at {position}: {text[position:position + 20]!r}")
        out.append(match[match.lastgroup])
        position = match.end()
    return out


def parse(text: str) -> Graph:
    tokens = _tokens(text)
    position = 0

    def take(expected: str | None = None) -> str:
        nonlocal position
        if position >= len(tokens):
            raise DotError("unexpected end")
        token = tokens[position]
        if expected is not None and token != expected:
            raise DotError(f"expected {expected!r}, got {token!r}")
        position += 1
        return token

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def identifier() -> str:
        token = take()
        if not (token.startswith('"') or re.fullmatch(r"[A-Za-z_]\w*", token)):
            raise DotError(f"expected an ID, got {token!r}")
        return _unquote(token)

    def attribute_list() -> dict[str, str]:
        attrs: dict[str, str] = {}
        take("[")
        while peek() != "]":
            name = identifier()
            take("=")
            if name in attrs:
                raise DotError(f"attribute {name} given twice")
            attrs[name] = shown(identifier())
            if peek() == ",":
                take(",")
        take("]")
        return attrs

    take("digraph")
    graph = Graph(identifier())
    take("{")
    while peek() != "}":
        if peek() in ("graph", "node", "edge"):
            kind = take()
            graph.attributes[kind] = attribute_list()
            take(";")
        elif peek() == "subgraph":
            take("subgraph")
            name = identifier()
            take("{")
            attrs, members = {}, []
            while peek() != "}":
                key = identifier()
                if peek() == "=":
                    take("=")
                    attrs[key] = shown(identifier())
                else:
                    members.append(key)
                take(";")
            take("}")
            graph.clusters[name] = (attrs, members)
        else:
            tail = identifier()
            if peek() == "->":
                take("->")
                head = identifier()
                graph.edges.append((tail, head, attribute_list() if peek() == "[" else {}))
            else:
                if tail in graph.nodes:
                    raise DotError(f"node {tail} declared twice")
                graph.nodes[tail] = attribute_list() if peek() == "[" else {}
            take(";")
    take("}")
    if position != len(tokens):
        raise DotError("text after the graph")
    undeclared = {end for tail, head, _ in graph.edges for end in (tail, head)} - set(graph.nodes)
    undeclared |= {m for _, members in graph.clusters.values() for m in members} - set(graph.nodes)
    if undeclared:
        raise DotError(f"undeclared nodes: {sorted(undeclared)}")
    return graph
