"""The runner's child process: set limits, load the facade (or real PyTorch), run the
program under an optional line tracer, and send what happened as JSON.

Usage (by `runner.run_program` only):
    python -m tapelint_engine.child --semantics S --backend B --memory-mb N
        --cpu-seconds T --watch 3,7 --reach 9,12 PROGRAM.py
with `TAPELINT_RESULT_FD` (an inherited pipe) and `TAPELINT_RESULT_TOKEN` in
the environment. Both are removed from the environment, and the pipe made
non-inheritable, before the program runs; the result is a newline, the
token, a newline, then the JSON, written once after the program ended, and
the parent reads only what follows the last token line. There is no file
the program could find and overwrite, and bytes it writes to the pipe
without the token are ignored (a program that inspects this harness's own frames could
still find both: the sandbox guards against accidents, not adversaries).
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
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

SAMPLE_CAP = 20000
TORCH_HEADROOM_MB = 8192  # PyTorch reserves address space far beyond what it uses


class Sampler:
    """Records (line, live nodes, saved bytes) when a watched line of the program runs,
    and which of the `reach` lines ran at all."""

    def __init__(self, path: str, lines: set[int], measure: Callable[[], tuple[int, int]],
                 reach: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        self.path, self.lines, self.measure = path, lines, measure
        self.samples: list[tuple[int, int, int]] = []
        self.unreached = set(reach)
        self.reached: list[int] = []

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        return self.local_trace if frame.f_code.co_filename == self.path else None

    def local_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            if frame.f_lineno in self.lines and len(self.samples) < SAMPLE_CAP:
                self.samples.append((frame.f_lineno, *self.measure()))
            if frame.f_lineno in self.unreached:
                self.unreached.discard(frame.f_lineno)
                self.reached.append(frame.f_lineno)
        return self.local_trace


def _limit(memory_mb: int, cpu_seconds: int, backend: str) -> None:
    """Hard limits (soft = hard): the program cannot raise them again."""
    mb = memory_mb + (TORCH_HEADROOM_MB if backend == "torch" else 0)
    for res, value in ((resource.RLIMIT_AS, mb * 2 ** 20), (resource.RLIMIT_CPU, cpu_seconds),
                       (resource.RLIMIT_CORE, 0)):
        try:
            _, hard = resource.getrlimit(res)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass


def _user_stack(tb: TracebackType | None, path: str) -> list[int]:
    """The program's own lines in a traceback, outermost call first."""
    lines = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    return lines


def _where(exc: BaseException, path: str) -> dict[str, Any]:
    """The failing line (the innermost of the program's frames) and the stack through it."""
    stack = _user_stack(exc.__traceback__, path)
    return {"line": stack[-1] if stack else None, "stack": stack}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)


def _described(exc: BaseException) -> str:
    """`ValueError: boom`, or just `KeyboardInterrupt` when there is no message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


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
    where = _where(exc, path)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        # A third-party module the engine does not provide: the program cannot
        # be judged here, which says nothing about the finding.
        return {"status": "unsupported", "error": f"needs the module `{exc.name}`, which is not available",
                **where, "detail": f"ModuleNotFoundError: {_first_line(exc)}"}
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
    return {"status": "error", "error_kind": "other", "error": _described(exc), **where, "detail": tb[-3000:]}


# ------------------------------------------------------------------------ engine


def run_engine(path: str, semantics: str, watch: set[int], reach: set[int]) -> dict[str, Any]:
    from . import errors, facade, source, tape

    tape.reset(semantics)
    source.set_user_file(path)
    facade.install()
    sampler = Sampler(path, watch, lambda: (tape.live_nodes(), tape.saved_bytes()), reach) \
        if watch or reach else None
    exc = _execute(path, sampler)
    out: dict[str, Any] = _traced(sampler)
    if isinstance(exc, errors.GraphError):
        out.update(_graph_error(exc))
    elif isinstance(exc, errors.NotSupportedByEngine):
        out.update(status="unsupported", error=str(exc), **_where(exc, path))
    elif exc is not None:
        out.update(_other(exc, path))
    else:
        graph = _caught_graph_error()
        unsupported = [r for r in errors.RAISED if r.kind == "unsupported"]
        if graph:
            out.update(graph)
        elif unsupported:
            out.update(status="unsupported", error=unsupported[0].message,
                       detail="raised and caught by the program")
        else:
            out.update(status="ok")
    return out


def _graph_detail(modified_line: int | None) -> str | None:
    return f"modified in place at line {modified_line}" if modified_line is not None else None


def _graph_error(exc: Any) -> dict[str, Any]:
    """The result for a graph error (`errors.GraphError`) that ended the program."""
    return {"status": "error", "error_kind": exc.kind, "error": _first_line(exc), "line": exc.line,
            "node_id": exc.node_id, "node_line": exc.node_line, "consumed_line": exc.consumed_line,
            "detail": _graph_detail(exc.modified_line), "node_lines": list(exc.node_lines), "stack": list(exc.stack),
            "reused_lines": list(exc.reused_lines)}


def _caught_graph_error() -> dict[str, Any] | None:
    """The first graph error the program raised and caught itself, if any."""
    from . import errors

    r = next((r for r in errors.RAISED if r.kind != "unsupported"), None)
    if r is None:
        return None
    return {"status": "error", "error_kind": r.kind, "error": r.message.splitlines()[0], "line": r.line,
            "node_id": r.node_id, "node_line": r.node_line, "consumed_line": r.consumed_line, "caught": True,
            "detail": _graph_detail(r.modified_line), "node_lines": list(r.node_lines), "stack": list(r.stack),
            "reused_lines": list(r.reused_lines)}


# ------------------------------------------------------------------------- torch

_FORWARD_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _torch_counts() -> tuple[int, int]:
    """Graph nodes reachable from live tensors, and the bytes their saved tensors hold."""
    import torch

    gc.collect()
    seen: set[int] = set()
    stack: list[Any] = [o.grad_fn for o in gc.get_objects()
             if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    nbytes, ptrs = 0, set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
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
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return len(seen), nbytes


def _traced(sampler: Sampler | None) -> dict[str, Any]:
    return {"samples": sampler.samples if sampler else [], "reached": sorted(sampler.reached) if sampler else []}


def run_torch(path: str, watch: set[int], reach: set[int], semantics: str = "torch") -> dict[str, Any]:
    """Run on real PyTorch; under strict semantics with burn's tape tracked over it."""
    try:
        import torch
    except ImportError:
        return {"status": "unsupported", "detail": "PyTorch is not installed"}

    from .errors import SECOND_BACKWARD, GraphError

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
    sampler = Sampler(path, watch, _torch_counts, reach) if watch or reach else None
    from . import strict_torch

    with strict_torch.tracking(path, semantics == "strict"):
        exc = _execute(path, sampler)
    out: dict[str, Any] = _traced(sampler)
    if isinstance(exc, GraphError):
        out.update(_graph_error(exc))
        return out
    caught = _caught_graph_error()
    if caught is not None:  # burn panics where the program caught the tracker's error
        out.update(caught)
        return out
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
    out.update(status="error", error_kind=kind, error=_first_line(exc), **_where(exc, path),
               node_line=node_line, node_lines=frames[::-1],
               detail="node line from anomaly mode" if node_line else None)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--semantics", default="torch")
    p.add_argument("--backend", default="engine")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--cpu-seconds", type=int, default=31)
    p.add_argument("--watch", default="")
    p.add_argument("--reach", default="")
    p.add_argument("path")
    ns = p.parse_args(argv)
    channel = _result_channel()
    _limit(ns.memory_mb, ns.cpu_seconds, ns.backend)
    watch = {int(x) for x in ns.watch.split(",") if x}
    reach = {int(x) for x in ns.reach.split(",") if x}
    path = os.path.abspath(ns.path)
    if ns.backend == "torch":
        result = run_torch(path, watch, reach, ns.semantics)
    else:
        result = run_engine(path, ns.semantics, watch, reach)
    sys.stdout.flush()
    sys.stderr.flush()
    channel(json.dumps(result))
    return 0


def _result_channel() -> Callable[[str], None]:
    """The writer of the one result message (see the module docstring)."""
    fd = int(os.environ.pop("TAPELINT_RESULT_FD"))
    token = os.environ.pop("TAPELINT_RESULT_TOKEN").encode()
    os.set_inheritable(fd, False)  # a subprocess of the program does not get it

    def send(text: str) -> None:
        data = b"\n" + token + b"\n" + text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
        os.close(fd)

    return send


if __name__ == "__main__":
    sys.exit(main())
