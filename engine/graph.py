"""The recorded graph at the failing backward, as data, for `tapelint run
--graph` and `tapelint confirm --graph` (tapelint/graph.py draws it).

The program runs once more, on its own, in the sandbox of `run`
(`runner.run_child`: `python -m tapelint_engine.graph` with the same limits,
environment, working directory and result channel): every backward call is
noted, and when a walk raises PyTorch's or burn's graph error, the graph reachable from
that walk's roots is copied out before the error propagates. Nothing in the
tape changes; this module wraps `run_backward` in the child only.

What it reads of the tape (engine/tape.py), and nothing else: a node's `id`,
`name()`, `line`, `inputs` (parent nodes, leaf tensors, or None),
`saves_any`, `saved` (slot -> saved tensor with `.arr`, None once freed),
`released` and `released_line` (freed under torch, consumed under strict);
a tensor's `_node` and `arr`; `_reachable(nodes)` (the walk's own order);
`run_backward(roots, ...)`'s first argument; and the `GraphError` fields
`node_id`, `line`, `consumed_line`, `kind`.

The parent side (`record_graph`) imports neither numpy nor the tape.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

MAX_NODES = 300  # a large model's graph is cut, nearest the roots first


def record_graph(path: str, semantics: str = "torch", *, timeout: float = 30.0,
                 memory_mb: int | None = None) -> dict[str, Any]:
    """Run `path` in the sandbox of `run` (`runner.run_child`: its limits,
    environment, working directory and result channel) and return the
    recorded graph (see `snapshot`), or `{"status": "timeout" | "crash",
    "detail": ...}`."""
    from .runner import DEFAULT_MEMORY_MB, cpu_seconds, run_child

    memory = DEFAULT_MEMORY_MB if memory_mb is None else memory_mb
    arguments = ["--semantics", semantics, "--memory-mb", str(memory), "--cpu-seconds", str(cpu_seconds(timeout)),
                 os.path.abspath(path)]
    with tempfile.TemporaryDirectory(prefix="tapelint-graph-") as home:
        outcome = run_child("tapelint_engine.graph", arguments, timeout=timeout, home=home)
    if outcome.error is not None:
        return {"status": "crash", "detail": outcome.error}
    if outcome.timed_out:
        return {"status": "timeout", "detail": f"no result within {timeout:g} s"}
    if outcome.result is None:
        return {"status": "crash", "detail": outcome.why_no_result()}
    return outcome.result


# ------------------------------------------------------------------- the child


def reachable(roots: Sequence[Any]) -> tuple[list[Any], int]:
    """The nodes behind the root tensors in the order the tape validates them
    (breadth first), at most MAX_NODES, and how many more were left out."""
    from .tape import _reachable

    nodes = _reachable([t._node for t in roots if getattr(t, "_node", None) is not None])
    return nodes[:MAX_NODES], max(len(nodes) - MAX_NODES, 0)


def state_of(node: Any) -> tuple[bool, list[dict[str, Any]]]:
    """Whether a node is released, and the tensors it holds (slot, shape)."""
    saved = node.saved or {}
    return bool(node.released), [{"slot": str(slot), "shape": list(t.arr.shape)} for slot, t in saved.items()]


def snapshot(roots: Sequence[Any], nodes: Sequence[Any], left_out: int,
             before: dict[int, tuple[bool, list[dict[str, Any]]]], error: Any,
             backward_lines: Sequence[int | None]) -> dict[str, Any]:
    """The failing walk's graph as JSON-able data: its nodes (op, line, and
    as the walk found them: saved tensors, freed or consumed by an earlier
    walk), whether this walk released them before it failed, leaves, the
    node it needed, and every backward call."""
    from .tape import Node

    drawn = {id(n) for n in nodes}
    leaves: dict[int, dict[str, Any]] = {}

    def key(edge: Any) -> str | None:
        if isinstance(edge, Node):
            return f"n{edge.id}" if id(edge) in drawn else None
        if edge is None:
            return None
        if id(edge) not in leaves:
            leaves[id(edge)] = {"key": f"leaf{len(leaves)}", "shape": list(edge.arr.shape)}
        return str(leaves[id(edge)]["key"])

    records = [
        {
            "key": f"n{node.id}",
            "id": node.id,
            "op": node.name(),
            "line": node.line,
            "released_before": before[id(node)][0],  # by an earlier walk
            "released": bool(node.released),  # now, this walk included
            "released_line": node.released_line,
            "saves": bool(node.saves_any),
            "saved": before[id(node)][1],  # what the walk found saved
            "inputs": [k for k in map(key, node.inputs) if k is not None],
        }
        for node in nodes
    ]
    return {
        "status": "error",
        "kind": error.kind,
        "error": (str(error).strip().splitlines() or [type(error).__name__])[0],
        "line": error.line,
        "consumed_line": error.consumed_line,
        "node_id": error.node_id,
        "backward_lines": list(backward_lines),
        "roots": [f"n{t._node.id}" for t in roots if getattr(t, "_node", None) is not None],
        "nodes": records,
        "leaves": list(leaves.values()),
        "left_out": left_out,
    }


def _recording(original: Callable[..., Any], state: dict[str, Any]) -> Callable[..., Any]:
    from . import errors
    from .source import user_line

    def run_backward(roots: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        state["backward_lines"].append(user_line())
        # What earlier walks released, read before this one starts releasing.
        nodes, left_out = reachable(roots) if state["graph"] is None else ([], 0)
        before = {id(n): state_of(n) for n in nodes}
        try:
            return original(roots, *args, **kwargs)
        except errors.GraphError as exc:
            if state["graph"] is None:  # the first failing walk, even if the program catches it
                state["graph"] = snapshot(roots, nodes, left_out, before, exc, state["backward_lines"])
            raise

    return run_backward


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapelint_engine.graph")
    parser.add_argument("--semantics", default="torch")
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--cpu-seconds", type=int, default=31)
    parser.add_argument("path")
    ns = parser.parse_args(argv)
    from . import child, facade, source, tape
    from .facade import autograd

    send = child._result_channel()  # before the program can see its descriptor
    child._limit(ns.memory_mb, ns.cpu_seconds, "engine")  # the runner child's limits
    path = os.path.abspath(ns.path)
    tape.reset(ns.semantics)
    source.set_user_file(path)
    facade.install()
    state: dict[str, Any] = {"graph": None, "backward_lines": []}
    tape.run_backward = _recording(tape.run_backward, state)  # Tensor.backward looks it up here
    autograd.run_backward = _recording(autograd.run_backward, state)  # torch.autograd.grad/backward
    error = child._execute(path, None)
    result = state["graph"] or {"status": "ok" if error is None else "other",
                                "error": None if error is None else f"{type(error).__name__}: {error}"[:300],
                                "backward_lines": state["backward_lines"]}
    result["semantics"] = ns.semantics
    sys.stdout.flush()
    sys.stderr.flush()
    send(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
