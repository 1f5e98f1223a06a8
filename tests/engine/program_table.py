"""Measure docs/engine.md's table of the realistic programs (`programs/`) and print it
with its totals: each program's outcome on the engine and on real PyTorch under
both semantics (the strict one against the tracker over PyTorch), whether what it
prints is PyTorch's, and the verdict of `tapelint confirm --backend auto` on every
finding tapelint reports on it.

Printed numbers are compared with both backends started from the engine's default
seed (`program_runner.py`): a seeded program reseeds anyway, and an unseeded one
(PyTorch 2.13 seeds at random per process) is then compared on one stream too;
the `seeded` column says which it is.

Usage: python tests/engine/program_table.py   (from the repository root; about a minute)
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
PROGRAMS = sorted((HERE / "programs").glob("*.py"))
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
RTOL = 1e-4  # float32 rounding, accumulated over a short training loop


def outcomes(backend: str, semantics: str) -> dict[str, dict]:
    strict = ["--strict"] if semantics == "strict" else []
    proc = subprocess.run([sys.executable, str(HERE / "program_runner.py"), backend, *strict, *map(str, PROGRAMS)],
                          capture_output=True, text=True, timeout=900, env=ENV, stdin=subprocess.DEVNULL)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if len(rows) != len(PROGRAMS):
        sys.exit(f"program_runner.py {backend} {semantics}: {proc.stderr[-2000:]}")
    return {Path(r["path"]).stem: r for r in rows}


def verdicts(semantics: str) -> dict[str, list[str]]:
    """Each program's findings as `TL002:23 confirmed`, from one `confirm` run."""
    proc = subprocess.run([sys.executable, "-m", "tapelint", "confirm", "--isolated", "--backend", "auto",
                           "--semantics", semantics, "--format", "json", *map(str, PROGRAMS)],
                          capture_output=True, text=True, timeout=900, env=ENV, stdin=subprocess.DEVNULL)
    found: dict[str, list[str]] = {}
    for d in json.loads(proc.stdout)["diagnostics"]:
        c = d["confirmation"]
        on = " on PyTorch" if c["runtime"].get("backend") == "torch" else ""
        found.setdefault(Path(d["path"]).stem, []).append(
            f"{d['code']}:{d['range']['start']['line']} {c['status']}{on}")
    return found


def outcome(r: dict) -> str:
    if r["status"] == "error":
        return f"{r['error_kind']}, line {r['line']}"
    return r["status"]


def same(a: dict, b: dict) -> bool:
    return (a["status"], a["error_kind"], a["line"]) == (b["status"], b["error_kind"], b["line"])


def printed(engine: str, torch: str) -> str:
    """How the engine's output compares with PyTorch's."""
    if not engine and not torch:
        return "nothing printed"
    if engine == torch:
        return "identical"
    if NUMBER.sub("#", engine) == NUMBER.sub("#", torch):
        pairs = zip(NUMBER.findall(engine), NUMBER.findall(torch))
        if all(math.isclose(float(a), float(b), rel_tol=RTOL, abs_tol=1e-6) for a, b in pairs):
            return "PyTorch's, to float32 rounding"
    return "differ"


def main() -> int:
    runs = {(b, s): outcomes(b, s) for b in ("engine", "torch") for s in ("torch", "strict")}
    found = {s: verdicts(s) for s in ("torch", "strict")}
    print("| program | seeded | engine, torch semantics | same outcome and line as PyTorch | printed numbers"
          " | engine, strict | same strict outcome as the tracker | confirm, torch | confirm, strict |")
    print("|---|---|---|---|---|---|---|---|---|")
    totals = {"agree": 0, "agree_strict": 0, "unsupported_strict": 0, "pytorchs_numbers": 0, "printing": 0,
              "seeded_printing": 0, "seeded_pytorchs": 0, "findings": 0, "accepted": 0}
    for path in PROGRAMS:
        name = path.stem
        e, t = runs["engine", "torch"][name], runs["torch", "torch"][name]
        es, ts = runs["engine", "strict"][name], runs["torch", "strict"][name]
        seeded = "manual_seed" in path.read_text()
        numbers = printed(e["output"], t["output"])
        strict_agrees = "n/a (engine: unsupported)" if es["status"] == "unsupported" else \
            ("yes" if same(es, ts) else f"no (tracker: {outcome(ts)})")
        judged = {s: found[s].get(name, []) for s in ("torch", "strict")}
        totals["agree"] += same(e, t)
        totals["agree_strict"] += strict_agrees == "yes"
        totals["unsupported_strict"] += es["status"] == "unsupported"
        if numbers != "nothing printed":
            ours = numbers in ("identical", "PyTorch's, to float32 rounding")
            totals["printing"] += 1
            totals["pytorchs_numbers"] += ours
            totals["seeded_printing"] += seeded
            totals["seeded_pytorchs"] += seeded and ours
        for verdict in judged["torch"] + judged["strict"]:
            totals["findings"] += 1
            totals["accepted"] += verdict.split()[1] in ("confirmed", "not-reached")
        print(f"| {name} | {'yes' if seeded else 'no'} | {outcome(e)} | {'yes' if same(e, t) else f'no (PyTorch: {outcome(t)})'}"
              f" | {numbers} | {outcome(es)} | {strict_agrees} | {', '.join(judged['torch']) or '-'}"
              f" | {', '.join(judged['strict']) or '-'} |")
    n = len(PROGRAMS)
    print(f"\n{n} programs; torch semantics: {totals['agree']}/{n} same outcome and line as PyTorch; "
          f"strict: {totals['agree_strict']}/{n} as the tracker ({totals['unsupported_strict']} unsupported "
          f"on the engine); printed numbers PyTorch's: {totals['pytorchs_numbers']}/{totals['printing']} "
          f"programs that print ({totals['seeded_pytorchs']}/{totals['seeded_printing']} seeded); "
          f"findings confirmed or not-reached with --backend auto: {totals['accepted']}/{totals['findings']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
