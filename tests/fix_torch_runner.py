"""Run programs under real PyTorch and report how each ended and who learned, as JSON.

Usage: python fix_torch_runner.py OUT.json PROGRAM.py...

The fix harness (`fix_harness.py`) runs every program before and after each
fix. One process runs many programs (importing torch once is most of the
cost), each with `runpy.run_path` from its own folder and an alarm timeout.

For each program the report holds:

* `kind`: `ok`, `fails` (the second-backward RuntimeError), `inplace`,
  `error` (anything else) or `timeout`; `line`: the innermost traceback
  frame in the program for an exception; `error`: its first line;
* `received`: the labels of the leaf tensors a backward gave a gradient to.
  A leaf is labelled by the order in which the run first sees it (the
  output of a torch call: a `requires_grad=True` factory, `requires_grad_`,
  a parameter's initialiser; else the backward that reaches it), so the
  same program prefix labels the same tensors in every variant;
* `optimizers`: per optimizer (labelled by creation order), `[stepped,
  stepped_with_a_gradient]`: an optimizer stepped only over parameters
  without gradients is a model that silently stopped learning.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import signal
import sys
import warnings

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.overrides import TorchFunctionMode
from torch_fixture_runner import INPLACE, PER_FIXTURE_TIMEOUT, SECOND_BACKWARD, _fixture_line, _from_its_folder


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


class _Learning:
    """Labels leaves and optimizers, and records which leaves a backward
    reached and which optimizers stepped with gradients."""

    def __init__(self) -> None:
        self.leaves: dict[int, tuple[torch.Tensor, str]] = {}  # the tensor is kept so ids stay unique
        self.received: set[str] = set()
        self.optimizers: dict[int, tuple[object, str]] = {}
        self.steps: dict[str, list[bool]] = {}

    def label(self, tensor: torch.Tensor) -> str:
        entry = self.leaves.get(id(tensor))
        if entry is None:
            entry = self.leaves[id(tensor)] = (tensor, f"leaf{len(self.leaves)}")
        return entry[1]

    def reached(self, roots) -> list[torch.Tensor]:
        """The leaves that a backward from `roots` accumulates into."""
        roots = [roots] if isinstance(roots, torch.Tensor) else list(roots)
        stack = [r.grad_fn for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        leaves = [r for r in roots if isinstance(r, torch.Tensor) and r.is_leaf and r.requires_grad]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            variable = getattr(node, "variable", None)
            if isinstance(variable, torch.Tensor):
                leaves.append(variable)
            stack.extend(fn for fn, _ in node.next_functions)
        return leaves

    def on_step(self, optimizer, args, kwargs) -> None:  # noqa: ARG002
        entry = self.optimizers.get(id(optimizer))
        if entry is None:
            entry = self.optimizers[id(optimizer)] = (optimizer, f"opt{len(self.optimizers)}")
        with_grad = any(p.grad is not None for g in optimizer.param_groups for p in g["params"])
        record = self.steps.setdefault(entry[1], [False, False])
        record[0] = True
        record[1] = record[1] or with_grad


class _LeafLabeller(TorchFunctionMode):
    def __init__(self, learning: _Learning) -> None:
        super().__init__()
        self.learning = learning

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.is_leaf and out.requires_grad:
            self.learning.label(out)
        return out


@contextlib.contextmanager
def _observed(learning: _Learning):
    """`torch.autograd.backward` (which `Tensor.backward` calls) records the
    leaves it reached once it returns; every optimizer step is recorded."""
    real_backward = torch.autograd.backward

    def backward(tensors, *args, **kwargs):
        reached = learning.reached(tensors)
        inputs = kwargs.get("inputs")
        real_backward(tensors, *args, **kwargs)
        if inputs is None:
            for leaf in reached:
                learning.received.add(learning.label(leaf))

    torch.autograd.backward = backward
    handle = register_optimizer_step_pre_hook(learning.on_step)
    try:
        with _LeafLabeller(learning):
            yield
    finally:
        handle.remove()
        torch.autograd.backward = real_backward


def run_program(path: str) -> dict:
    filename = os.path.abspath(path)
    learning = _Learning()
    result: dict = {"kind": "ok", "line": None, "error": None}
    torch.manual_seed(0)
    torch.set_grad_enabled(True)
    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(PER_FIXTURE_TIMEOUT)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                with _observed(learning), _from_its_folder(filename):
                    runpy.run_path(filename, run_name="__main__")
            except _Timeout:
                result["kind"] = "timeout"
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: the program ended early
                text = str(exc)
                result["line"] = _fixture_line(exc.__traceback__, filename)
                if isinstance(exc, RuntimeError) and SECOND_BACKWARD in text:
                    result["kind"] = "fails"
                elif isinstance(exc, RuntimeError) and INPLACE in text:
                    result["kind"] = "inplace"
                elif isinstance(exc, SystemExit) and exc.code in (None, 0):
                    pass
                else:
                    result["kind"] = "error"
                result["error"] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
    result["received"] = sorted(learning.received)
    result["optimizers"] = learning.steps
    return result


def main(argv: list[str]) -> int:
    out_path, paths = argv[0], argv[1:]
    torch.set_num_threads(1)
    report = {os.path.abspath(p): run_program(p) for p in paths}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
