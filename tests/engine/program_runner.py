"""Run many programs in one process on one backend, with the runner child's own
classification (`child.run_engine` / `child.run_torch`), and print one JSON line
per program (its outcome and what it printed): importing torch (or the facade)
once keeps the corpus test fast. Each program starts from the engine's default
seed on both backends (PyTorch 2.13 seeds its own at random per process), so an
unseeded program's numbers can be compared too, whatever ran before it.

Usage: python program_runner.py engine|torch [--strict] PROGRAM.py...
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys


def main(argv: list[str]) -> int:
    backend, args = argv[0], argv[1:]
    semantics = "strict" if args[:1] == ["--strict"] else "torch"
    paths = [os.path.abspath(p) for p in args[semantics == "strict":]]  # lines match absolute paths
    from tapelint_engine import child, errors, rng

    if backend == "torch":
        import torch
    for path in paths:
        errors.RAISED.clear()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            if backend == "engine":
                rng.manual_seed(rng.DEFAULT_SEED)
                result = child.run_engine(path, semantics, set(), set())
            else:
                torch.manual_seed(rng.DEFAULT_SEED)
                result = child.run_torch(path, set(), set(), semantics)
        keep = {k: result.get(k) for k in ("status", "error_kind", "error", "line")}
        print(json.dumps({"path": path, **keep, "output": printed.getvalue()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
