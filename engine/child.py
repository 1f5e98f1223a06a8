"""The runner's child process: set limits, load the facade (or real PyTorch), run the
program under an optional line tracer, and write what happened as JSON.

Usage (by `runner.run_program` only):
    python -m tapelint_engine.child --semantics S --backend B --memory-mb N
        --cpu-seconds T --report OUT.json --watch 3,7 PROGRAM.py
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import runpy
import sys
import traceback
import warnings
from types import FrameType, TracebackType
from typing import Any, Callable

SAMPLE_CAP = 20000
TORCH_HEADROOM_MB = 8192  # PyTorch reserves address space far beyond what it uses


class Sampler:
    """Records (line, live nodes, saved bytes) when a watched line of the program runs."""

    def __init__(self, path: str, lines: set[int], measure: Callable[[], tuple[int, int]]) -> None:
        self.path, self.lines, self.measure = path, lines, measure
        self.samples: list[tuple[int, int, int]] = []

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self.local_trace if frame.f_code.co_filename == self.path else None

    def local_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno in self.lines and len(self.samples) < SAMPLE_CAP:
            self.samples.append((frame.f_lineno, *self.measure()))
        return self.local_trace


def _limit(memory_mb: int, cpu_seconds: int, backend: str) -> None:
    mb = memory_mb + (TORCH_HEADROOM_MB if backend == "torch" else 0)
    for res, value in ((resource.RLIMIT_AS, mb * 2 ** 20), (resource.RLIMIT_CPU, cpu_seconds)):
        try:
            _, hard = resource.getrlimit(res)
            resource.setrlimit(res, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))
        except (ValueError, OSError):
            pass


def _user_line(tb: TracebackType | None, path: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)


def _execute(path: str, sampler: Sampler | None) -> BaseException | None:
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(path))
    if sampler is not None:
        sys.settrace(sampler.global_trace)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        return None if exc.code in (None, 0) else exc
    except BaseException as exc:  # noqa: BLE001 - every outcome is reported
        return exc
    finally:
        sys.settrace(None)
    return None


def _other(exc: BaseException, path: str) -> dict[str, Any]:
    if isinstance(exc, MemoryError):
        return {"status": "crash", "detail": "memory limit reached (MemoryError)"}
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
    return {"status": "error", "error_kind": "other", "error": f"{type(exc).__name__}: {_first_line(exc)}",
            "line": _user_line(exc.__traceback__, path), "detail": tb[-3000:]}


# ------------------------------------------------------------------------ engine


def run_engine(path: str, semantics: str, watch: set[int]) -> dict[str, Any]:
    from . import errors, facade, source, tape

    tape.reset(semantics)
    source.set_user_file(path)
    facade.install()
    sampler = Sampler(path, watch, lambda: (tape.live_nodes(), tape.saved_bytes())) if watch else None
    exc = _execute(path, sampler)
    out: dict[str, Any] = {"samples": sampler.samples if sampler else []}
    if isinstance(exc, errors.GraphError):
        out.update(status="error", error_kind=exc.kind, error=_first_line(exc), line=exc.line,
                   node_id=exc.node_id, node_line=exc.node_line, consumed_line=exc.consumed_line,
                   detail=_graph_detail(exc.modified_line), node_lines=list(exc.node_lines))
    elif isinstance(exc, errors.NotSupportedByEngine):
        out.update(status="unsupported", error=str(exc), line=_user_line(exc.__traceback__, path))
    elif exc is not None:
        out.update(_other(exc, path))
    else:
        graph = [r for r in errors.RAISED if r.kind != "unsupported"]
        unsupported = [r for r in errors.RAISED if r.kind == "unsupported"]
        if graph:
            r = graph[0]
            out.update(status="error", error_kind=r.kind, error=r.message.splitlines()[0],
                       line=r.line, node_id=r.node_id, node_line=r.node_line,
                       consumed_line=r.consumed_line, caught=True,
                       detail=_graph_detail(r.modified_line), node_lines=list(r.node_lines))
        elif unsupported:
            out.update(status="unsupported", error=unsupported[0].message,
                       detail="raised and caught by the program")
        else:
            out.update(status="ok")
    return out


def _graph_detail(modified_line: int | None) -> str | None:
    return f"modified in place at line {modified_line}" if modified_line is not None else None


# ------------------------------------------------------------------------- torch

_FORWARD_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _torch_counts() -> tuple[int, int]:
    """Graph nodes reachable from live tensors, and the bytes their saved tensors hold."""
    import torch

    gc.collect()
    seen: set[int] = set()
    stack = [o.grad_fn for o in gc.get_objects()
             if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    nbytes, ptrs = 0, set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    v = getattr(node, attr)
                except RuntimeError:
                    continue
                for t in (v if isinstance(v, (list, tuple)) else (v,)):
                    if isinstance(t, torch.Tensor) and t.data_ptr() not in ptrs:
                        ptrs.add(t.data_ptr())
                        nbytes += t.numel() * t.element_size()
        stack.extend(n for n, _ in node.next_functions)
    return len(seen), nbytes


def run_torch(path: str, watch: set[int]) -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {"status": "unsupported", "detail": "PyTorch is not installed"}

    from .errors import SECOND_BACKWARD

    torch.autograd.set_detect_anomaly(True, check_nan=False)
    anomalies: list[str] = []
    show = warnings.showwarning

    def record(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
               line: Any = None) -> None:
        if "Traceback of forward call" in str(message):
            anomalies.append(str(message))
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = record
    sampler = Sampler(path, watch, _torch_counts) if watch else None
    exc = _execute(path, sampler)
    out: dict[str, Any] = {"samples": sampler.samples if sampler else []}
    if exc is None:
        out["status"] = "ok"
        return out
    if not isinstance(exc, RuntimeError):
        out.update(_other(exc, path))
        return out
    msg = str(exc)
    kind = ("second-backward" if SECOND_BACKWARD in msg else
            "inplace" if "modified by an inplace operation" in msg else None)
    if kind is None:
        out.update(_other(exc, path))
        return out
    node_line, frames = None, []
    if anomalies:
        frames = [int(m["line"]) for m in _FORWARD_FRAME.finditer(anomalies[-1]) if m["file"] == path]
        node_line = frames[-1] if frames else None
    out.update(status="error", error_kind=kind, error=_first_line(exc),
               line=_user_line(exc.__traceback__, path), node_line=node_line, node_lines=frames[::-1],
               detail="node line from anomaly mode" if node_line else None)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--semantics", default="torch")
    p.add_argument("--backend", default="engine")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--cpu-seconds", type=int, default=31)
    p.add_argument("--report", required=True)
    p.add_argument("--watch", default="")
    p.add_argument("path")
    ns = p.parse_args(argv)
    _limit(ns.memory_mb, ns.cpu_seconds, ns.backend)
    watch = {int(x) for x in ns.watch.split(",") if x}
    path = os.path.abspath(ns.path)
    if ns.backend == "torch":
        result = run_torch(path, watch)
    else:
        result = run_engine(path, ns.semantics, watch)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(ns.report, "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
