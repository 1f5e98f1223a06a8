"""Run many programs in one process on one backend, with the runner child's own
classification (`child.run_engine` / `child.run_torch`), and print one JSON line
per program: importing torch (or the facade) once keeps the corpus test fast.

Usage: python program_runner.py engine|torch [--strict] PROGRAM.py...
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    backend, args = argv[0], argv[1:]
    semantics = "strict" if args[:1] == ["--strict"] else "torch"
    paths = [os.path.abspath(p) for p in args[semantics == "strict":]]  # lines match absolute paths
    from tapelint_engine import child, errors

    for path in paths:
        errors.RAISED.clear()
        result = child.run_engine(path, semantics, set(), set()) if backend == "engine" \
            else child.run_torch(path, set(), set(), semantics)
        keep = {k: result.get(k) for k in ("status", "error_kind", "error", "line")}
        print(json.dumps({"path": path, **keep}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
