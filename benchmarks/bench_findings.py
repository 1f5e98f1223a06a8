"""Reporting cost on a file full of findings: a generated module of about
20,000 lines with one TL003 finding per 100 lines (200 in all), linted once.

    python benchmarks/bench_findings.py [--blocks N]

Printed: lines, findings, and the wall time of `lint_source` (parse,
analysis, rules and their fixes) and of the analysis alone. Fix builders
must cost what they look at, not a walk of the module per finding: the
difference between the two times is the reporting cost.
"""

from __future__ import annotations

import argparse
import time

import libcst as cst

from tapelint.analysis.driver import analyze_module
from tapelint.lint import lint_source
from tapelint.settings import Settings

PADDING = 92  # statements per block after its loop, so a block is 100 lines


def generate(blocks: int) -> str:
    """`blocks` training functions, each accumulating its tracked loss."""
    lines = ["import torch", "w = torch.ones(3, requires_grad=True)"]
    for i in range(blocks):
        lines += [
            f"def train_{i}(data):",
            f"    total_{i} = 0.0",
            "    for x in data:",
            "        loss = (w * x).sum()",
            "        loss.backward()",
            f"        total_{i} += loss",
            f"    print(total_{i})",
        ]
        lines += [f"    v{j} = {j} + 1" for j in range(PADDING)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=200)
    blocks = parser.parse_args().blocks
    source = generate(blocks)
    lines = source.count("\n")
    start = time.perf_counter()
    result = lint_source(source, "generated.py", Settings())
    total = time.perf_counter() - start
    module = cst.parse_module(source)
    start = time.perf_counter()
    analyze_module(module, Settings(), lines)
    analysis = time.perf_counter() - start
    findings = sum(d.code == "TL003" for d in result.diagnostics)
    print(f"lines {lines}  TL003 findings {findings}")
    print(f"lint_source {total:.2f}s  (analysis alone {analysis:.2f}s)")


if __name__ == "__main__":
    main()
