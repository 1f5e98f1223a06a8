"""Reporting cost on a file full of findings: a generated module of about
20,000 lines with one finding per 100 lines (200 in all), linted once.

    python benchmarks/bench_findings.py [--blocks N] [--kinds tl003|mixed]

`tl003` blocks each accumulate a tracked loss (TL003, whose fixes read
every use of the total); `mixed` blocks cycle through TL001 (a hoisted
value), TL002 (a GAN step: the branch detach asks which optimizer steps
after each backward), TL003 and TL004 (a repeated backward), so every fix
builder runs.

Printed: lines, findings, and the CPU time (the process's own: steadier
than wall time on a shared machine) of `lint_source` (parse,
analysis, rules and their fixes), of the analysis alone, and of rendering
the text report (with its fixable counts). Fix builders must cost what
they look at, not a walk of the module per finding: the difference
between the first two times is the reporting cost.
"""

from __future__ import annotations

import argparse
import io
import time

import libcst as cst

from tapelint.analysis.driver import analyze_module
from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.reporters import REPORTERS, Report, ReportOptions
from tapelint.settings import Settings

PADDING = 92  # statements per block after its body, so a block is about 100 lines

HEADER = [
    "import torch",
    "import torch.nn as nn",
    "w = torch.ones(3, requires_grad=True)",
    "G = nn.Linear(3, 3)",
    "D = nn.Linear(3, 1)",
    "opt_g = torch.optim.SGD(G.parameters(), lr=0.1)",
    "opt_d = torch.optim.SGD(D.parameters(), lr=0.1)",
]


def _block(kind: str, i: int) -> list[str]:
    if kind == "tl003":
        return [f"def train_{i}(data):", f"    total_{i} = 0.0", "    for x in data:",
                "        loss = (w * x).sum()", "        loss.backward()", f"        total_{i} += loss",
                f"    print(total_{i})"]
    if kind == "tl001":
        return [f"def train_{i}(x):", "    feats = (w * x).exp()", "    for step in range(3):",
                "        loss = (feats * w).sum()", "        loss.backward()"]
    if kind == "tl002":
        return [f"def train_{i}(z):", "    for step in range(3):", "        fake = G(z)",
                "        g_loss = D(fake).sum()", "        g_loss.backward()", "        opt_g.step()",
                "        d_loss = D(fake).sum() + D(z).sum()", "        d_loss.backward()", "        opt_d.step()"]
    return [f"def train_{i}(x):", "    loss = (w.exp() * x).sum()", "    loss.backward()", "    loss.backward()"]


def generate(blocks: int, kinds: str = "tl003") -> str:
    cycle = ("tl003",) if kinds == "tl003" else ("tl001", "tl002", "tl003", "tl004")
    lines = list(HEADER)
    for i in range(blocks):
        lines += _block(cycle[i % len(cycle)], i)
        lines += [f"    v{j} = {j} + 1" for j in range(PADDING)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--kinds", choices=("tl003", "mixed"), default="tl003")
    args = parser.parse_args()
    source = generate(args.blocks, args.kinds)
    lines = source.count("\n")
    start = time.process_time()
    result = lint_source(source, "generated.py", Settings())
    total = time.process_time() - start
    module = cst.parse_module(source)
    start = time.process_time()
    analyze_module(module, Settings(), lines)
    analysis = time.process_time() - start
    start = time.process_time()
    REPORTERS["text"](Report("bench", Semantics.TORCH, (result,)), io.StringIO(),
                      ReportOptions(read_source=lambda path: source))
    text = time.process_time() - start
    codes = sorted({d.code for d in result.diagnostics})
    print(f"lines {lines}  findings {len(result.diagnostics)} ({', '.join(codes)})")
    print(f"CPU: lint_source {total:.2f}s  (analysis alone {analysis:.2f}s)  text report {text:.2f}s")


if __name__ == "__main__":
    main()
