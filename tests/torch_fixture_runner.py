"""Run fixture programs under real PyTorch and report what happened, as JSON.

Usage: python torch_fixture_runner.py OUT.json FIXTURE.py...

One process runs many fixtures (importing torch once is most of the cost).
Each fixture runs with `runpy.run_path` in a fresh namespace, under
`torch.autograd.set_detect_anomaly(True)` so that a failing backward names the
forward line of the node it could not run, with a per-fixture alarm timeout.

For each fixture the report holds:

* `kind`: `fails` (the second-backward RuntimeError), `inplace` (the in-place
  modification RuntimeError), `ok` (ran to the end), `error` (anything else),
  `timeout`;
* `line`: for an exception, the innermost traceback frame in the fixture file;
* `node`: for `fails`, the innermost fixture line of the anomaly-mode forward
  traceback of the node that could not run;
* `grows` (for `ok`): whether, at the end of the run, the graph reachable from
  the fixture's variables holds nodes created by two different executions of
  the same fixture statement (graph retention across iterations). Nodes are
  tagged at creation by a TorchFunctionMode with (line, how many times that
  line had started executing).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import signal
import sys
import traceback
import types
import warnings

import torch
from torch.overrides import TorchFunctionMode

SECOND_BACKWARD = "Trying to backward through the graph a second time"
INPLACE = "one of the variables needed for gradient computation has been modified by an inplace operation"
PER_FIXTURE_TIMEOUT = int(os.environ.get("TAPELINT_FIXTURE_TIMEOUT", "30"))


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


class _Tracer:
    """Counts, per fixture line, how many times it started executing."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.counts: dict[int, int] = {}

    def global_trace(self, frame, event, arg):  # noqa: ARG002
        if frame.f_code.co_filename != self.filename:
            return None
        return self.local_trace

    def local_trace(self, frame, event, arg):  # noqa: ARG002
        if event == "line":
            self.counts[frame.f_lineno] = self.counts.get(frame.f_lineno, 0) + 1
        return self.local_trace


class _Tagger(TorchFunctionMode):
    """Tags the grad_fn of every tensor a torch call returns with its fixture site."""

    def __init__(self, tracer: _Tracer) -> None:
        super().__init__()
        self.tracer = tracer
        self.tags: dict[int, tuple[object, tuple[int, int]]] = {}

    def _site(self):
        f = sys._getframe(2)
        while f is not None:
            if f.f_code.co_filename == self.tracer.filename:
                return (f.f_lineno, self.tracer.counts.get(f.f_lineno, 0))
            f = f.f_back
        return None

    def _tag(self, out, site, depth=0):
        if isinstance(out, torch.Tensor):
            gf = out.grad_fn
            if gf is not None and id(gf) not in self.tags:
                self.tags[id(gf)] = (gf, site)  # holding gf keeps its Python wrapper (and id) stable
        elif isinstance(out, (tuple, list)) and depth < 2:
            for o in out:
                self._tag(o, site, depth + 1)

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        site = self._site()
        if site is not None:
            self._tag(out, site)
        return out


MAX_DEPTH = 6  # containers and objects followed from the namespace (`trainer._metrics["train"]["loss"]` is 5 deep)


def _tensors_in(root, seen):
    """Every tensor reachable from `root` through containers and objects'
    attributes, breadth first: each object is reached at its shallowest depth,
    so a list the depth limit cut below one object is still read through a
    shorter path (a module-level alias of the same list)."""
    level = [root]
    for _depth in range(MAX_DEPTH + 1):
        following = []
        for value in level:
            if isinstance(value, torch.Tensor):
                yield value
                continue
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, (list, tuple, set, frozenset)):
                following.extend(value)
            elif isinstance(value, dict):
                following.extend(value.values())
            elif isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
                continue
            elif hasattr(value, "__dict__"):
                following.append(vars(value))
        level = following
    yield from (value for value in level if isinstance(value, torch.Tensor))


def _grows(namespace: dict, tagger: _Tagger) -> bool:
    keep = []  # keeps temporary node wrappers alive so that ids stay unique during the walk
    visited: set[int] = set()
    executions: dict[int, set[int]] = {}
    stack = [t.grad_fn for t in _tensors_in(namespace, set()) if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        keep.append(node)
        tag = tagger.tags.get(id(node))
        if tag is not None and tag[0] is node:
            line, count = tag[1]
            executions.setdefault(line, set()).add(count)
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()))
    return any(len(counts) >= 2 for counts in executions.values())


def _fixture_line(tb, filename):
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


def _anomaly_node_line(caught, filename):
    pattern = re.compile(rf'File "{re.escape(filename)}", line (\d+)')
    for w in caught:
        text = str(w.message)
        if "Traceback of forward call that caused the error" in text:
            lines = pattern.findall(text)
            if lines:
                return int(lines[-1])
    return None


@contextlib.contextmanager
def _from_its_folder(filename: str):
    """Run a project fixture as `python train.py` would from its folder: that
    folder first on sys.path, and the project's modules forgotten afterwards
    (another project has a `models.py` too)."""
    folder = os.path.dirname(filename)
    sys.path.insert(0, folder)
    loaded = set(sys.modules)
    try:
        yield
    finally:
        sys.path.remove(folder)
        for name in set(sys.modules) - loaded:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(folder + os.sep):
                del sys.modules[name]


def run_fixture(path: str) -> dict:
    filename = os.path.abspath(path)
    tracer = _Tracer(filename)
    tagger = _Tagger(tracer)
    result: dict = {"kind": "ok", "line": None, "node": None, "grows": False, "error": None}
    torch.set_grad_enabled(True)
    torch.autograd.set_detect_anomaly(True)
    stdout = io.StringIO()
    namespace = None
    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(PER_FIXTURE_TIMEOUT)
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stdout):
            warnings.simplefilter("always")
            sys.settrace(tracer.global_trace)
            try:
                with tagger, _from_its_folder(filename):
                    namespace = runpy.run_path(filename, run_name="__main__")
            except _Timeout:
                result.update(kind="timeout")
            except Exception as exc:  # noqa: BLE001
                sys.settrace(None)
                text = str(exc)
                result["line"] = _fixture_line(exc.__traceback__, filename)
                if isinstance(exc, RuntimeError) and SECOND_BACKWARD in text:
                    result["kind"] = "fails"
                    result["node"] = _anomaly_node_line(caught, filename)
                elif isinstance(exc, RuntimeError) and INPLACE in text:
                    result["kind"] = "inplace"
                else:
                    result["kind"] = "error"
                result["error"] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
            finally:
                sys.settrace(None)
            if namespace is not None and result["kind"] == "ok":
                result["grows"] = _grows(namespace, tagger)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
        torch.autograd.set_detect_anomaly(False)
    return result


def main(argv: list[str]) -> int:
    out_path, paths = argv[0], argv[1:]
    torch.set_num_threads(1)
    report = {}
    for p in paths:
        report[os.path.abspath(p)] = run_fixture(p)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
