"""Run one program in a sandboxed subprocess and report what happened.

This module imports neither numpy nor torch: the linter can call it freely.
The child (`python -m tapelint_engine.child`) does the work and writes the
report to a file; whatever happens to the child (timeout, crash, limits) the
parent turns into a `RunReport` instead of an exception.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

STATUSES = ("ok", "error", "timeout", "unsupported", "crash")
ERROR_KINDS = ("second-backward", "tape-consumed", "inplace", "other")
OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class RunReport:
    """The outcome of one run. Lines are 1-based lines of the user's file."""

    status: str
    error_kind: str | None = None
    error: str | None = None  # first line of the message
    line: int | None = None  # the failing call
    node_id: int | None = None  # the missing/freed/modified node
    node_line: int | None = None  # where that node was created
    consumed_line: int | None = None  # the backward that consumed or freed it
    detail: str | None = None
    samples: tuple[tuple[int, int, int], ...] = ()  # (line, live_nodes, saved_bytes)
    semantics: str = "torch"
    backend: str = "engine"
    path: str = ""
    duration_s: float = 0.0
    output: str = ""  # tail of the program's stdout and stderr
    caught: bool = False  # the error was raised, then caught by the program
    node_lines: tuple[int, ...] = ()  # the node's creation stack in the file, innermost first

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["samples"] = [list(s) for s in self.samples]
        d["node_lines"] = list(self.node_lines)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunReport":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["samples"] = tuple(tuple(s) for s in known.get("samples", ()))
        known["node_lines"] = tuple(known.get("node_lines", ()))
        return cls(**known)

    def growth(self, line: int) -> tuple[int, int]:
        """(live nodes, saved bytes) at the last sample of `line` minus the second one.
        The first execution precedes the loop's steady state (the previous iteration's
        loss is not alive yet), so it is skipped; needs three samples."""
        pts = [s for s in self.samples if s[0] == line]
        if len(pts) < 3:
            return 0, 0
        return pts[-1][1] - pts[1][1], pts[-1][2] - pts[1][2]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"  # BLAS thread pools reserve address space the limit would count
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_program(path: str, semantics: str = "torch", *, timeout: float = 30.0,
                memory_mb: int = 1024, watch_lines: tuple[int, ...] = (),
                backend: str = "engine") -> RunReport:
    """Run `path` on the engine (or real PyTorch) in a subprocess; never raises for the
    program's sake: a timeout, crash or unsupported API is a status."""
    if semantics not in ("torch", "strict"):
        raise ValueError(f"unknown semantics {semantics!r}")
    if backend not in ("engine", "torch"):
        raise ValueError(f"unknown backend {backend!r}")
    base = RunReport(status="crash", semantics=semantics, backend=backend, path=path)
    if backend == "torch" and semantics == "strict":
        return replace(base, status="unsupported", detail="real PyTorch has only torch semantics")
    fd, report_path = tempfile.mkstemp(prefix="tapelint-run-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "tapelint_engine.child", "--semantics", semantics,
           "--backend", backend, "--memory-mb", str(memory_mb),
           "--cpu-seconds", str(max(1, int(timeout) + 1)), "--report", report_path,
           "--watch", ",".join(str(n) for n in watch_lines), os.path.abspath(path)]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=_child_env(), cwd=os.path.dirname(os.path.abspath(path)),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        _remove(report_path)
        out = _text(exc.stdout) + _text(exc.stderr)
        return replace(base, status="timeout", detail=f"no result within {timeout:g} s",
                       duration_s=time.monotonic() - start, output=out[-OUTPUT_TAIL:])
    except OSError as exc:
        _remove(report_path)
        return replace(base, detail=f"could not start the child: {exc}")
    elapsed = time.monotonic() - start
    output = (proc.stdout + proc.stderr)[-OUTPUT_TAIL:]
    try:
        with open(report_path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        why = f"child exited with {proc.returncode}" if proc.returncode >= 0 else \
            f"child killed by signal {-proc.returncode}"
        return replace(base, detail=f"{why}; {proc.stderr.strip()[-800:]}", duration_s=elapsed,
                       output=output)
    finally:
        _remove(report_path)
    report = RunReport.from_dict({**data, "semantics": semantics, "backend": backend, "path": path})
    return replace(report, duration_s=elapsed, output=output)


def _text(x: Any) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------- CLI


def format_text(r: RunReport) -> str:
    head = f"{r.path}: {r.status} (semantics {r.semantics}, backend {r.backend}, {r.duration_s:.2f} s)"
    lines = [head]
    if r.error:
        lines.append(f"  {r.error_kind or 'error'}: {r.error}")
    if r.line is not None:
        lines.append(f"  failing call: line {r.line}")
    if r.node_id is not None or r.node_line is not None:
        node = f"NodeId({r.node_id})" if r.node_id is not None else "node"
        where = f" created at line {r.node_line}" if r.node_line is not None else ""
        lines.append(f"  missing node: {node}{where}")
    if r.consumed_line is not None:
        lines.append(f"  consumed by the backward at line {r.consumed_line}")
    if r.caught:
        lines.append("  (the program caught this error and went on)")
    if r.detail and r.status != "ok":
        lines.append("  " + r.detail.strip().replace("\n", "\n  "))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """`tapelint run FILE [--semantics torch|strict] [--backend engine|torch] [--format text|json]`.
    Exit 0: ran clean; 1: the program failed; 2: unsupported, timeout, crash or usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        args = args[1:]
    parser = argparse.ArgumentParser(prog="tapelint run",
                                     description="Execute a PyTorch program on the tapelint engine.")
    parser.add_argument("file")
    parser.add_argument("--semantics", choices=("torch", "strict"), default="torch")
    parser.add_argument("--backend", choices=("engine", "torch"), default="engine")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--memory-mb", type=int, default=1024)
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not os.path.isfile(ns.file):
        print(f"tapelint run: no such file: {ns.file}", file=sys.stderr)
        return 2
    report = run_program(ns.file, ns.semantics, timeout=ns.timeout, memory_mb=ns.memory_mb,
                         backend=ns.backend)
    print(report.to_json() if ns.format == "json" else format_text(report))
    return {"ok": 0, "error": 1}.get(report.status, 2)


if __name__ == "__main__":
    sys.exit(main())
