"""The result cache's targets (issue 12), measured in one run against libcst's
bare parse with the same number of processes, plus linear cost per line.

    python benchmarks/bench_cache.py [--target torch|DIR ...] [--jobs 2] [--touch REL]
    python benchmarks/bench_cache.py --linear

For each target (a corpus project folder, or `torch` for the installed
package) its Python files are copied into a scratch folder (the edit below
must not touch the real tree), then, each as a subprocess whose whole
process tree's CPU-seconds are read with `RUSAGE_CHILDREN`, next to wall
(niced, as `corpus_run.py` runs them):

1. bare: `bare_parse.py` over every file;
2. cold: `tapelint check` with an empty cache;
3. warm: the same again, nothing changed;
4. touched: after appending a comment to one module (`--touch`, default the
   first-party module most files' cached results depend on);
5. its importers, uncached: `tapelint check --no-cache` on the touched file
   and the files whose cache entries named it (what a touched run must
   re-lint at least).

Printed: cold / bare (target <= 0.8), warm / cold (<= 5%), touched against
5% of cold plus (5). `--linear` lints generated clean training code of 20k
and 80k lines and a 20k-line file with 200 findings, in-process, and prints
ms per line. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence

from bare_parse import count_lines
from bench_findings import generate as generate_findings
from corpus import python_files, torch_root
from corpus_run import Timed
from corpus_run import timed as corpus_timed

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(command: Sequence[str], cwd: str, env: dict[str, str] | None = None) -> Timed:
    """`corpus_run.timed` (niced, CPU of the whole process tree), saying when it failed."""
    done = corpus_timed(command, cwd, env)
    if done.returncode != 0:
        print(f"  ! {' '.join(command[:3])} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done


def tapelint(*arguments: str, jobs: int) -> list[str]:
    # The installed script, not `python -m`: that would put the linted folder
    # on `sys.path` first, where torch's `types.py` shadows the standard library's.
    script = os.path.join(os.path.dirname(sys.executable), "tapelint")
    start = [script] if os.path.exists(script) else [sys.executable, "-m", "tapelint"]
    return [*start, "check", "--exit-zero", "-q", "--jobs", str(jobs), *arguments]


def copy_python_files(root: str, scratch: str) -> list[str]:
    copied = []
    for path in python_files(root):
        target = os.path.join(scratch, os.path.relpath(path, root))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(target)
    return copied


def dependents(cache_dir: str) -> dict[str, list[str]]:
    """Each file some cached result read -> the files whose result read it."""
    found: dict[str, list[str]] = {}
    for folder, _, names in os.walk(cache_dir):
        for name in names:
            if not name.endswith(".json"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                entry = json.load(handle)
            owner = entry["path"][0]  # `cache._where`: the absolute path first
            for path, state in entry["facts"]:
                if state not in ("file", "dir", "missing") and path != owner:
                    found.setdefault(path, []).append(owner)
    return found


ROW = "  {:34} {:8.1f} s wall {:8.1f} s CPU"


def bench_target(name: str, root: str, jobs: int, touch: str | None) -> None:
    """Each figure printed as soon as it is measured (the whole takes long on torch)."""
    with tempfile.TemporaryDirectory(prefix="tapelint-bench-") as scratch:
        tree = os.path.join(scratch, "tree")
        files = copy_python_files(root, tree)
        lines = count_lines(files)  # also warms the page cache
        cache = os.path.join(scratch, "cache")
        env = {**os.environ, "TAPELINT_CACHE_DIR": cache}
        env.pop("TAPELINT_NO_CACHE", None)
        show(f"{name}: {len(files)} files, {lines:,} lines, jobs {jobs}, load {load()}")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
            listing.write("".join(f"{path}\n" for path in files))
        bare = timed([sys.executable, os.path.join(HERE, "bare_parse.py"), "--jobs", str(jobs),
                      "--files-from", listing.name], tree)
        os.unlink(listing.name)
        show(ROW.format("bare libcst parse", bare.wall, bare.cpu))
        cold = timed(tapelint(".", jobs=jobs), tree, env)
        show(ROW.format("cold (empty cache)", cold.wall, cold.cpu)
             + f"   {cold.cpu / bare.cpu:5.2f}x bare (target <= 0.8)")
        warm = timed(tapelint(".", jobs=jobs), tree, env)
        show(ROW.format("warm (nothing changed)", warm.wall, warm.cpu)
             + f"   {100 * warm.cpu / cold.cpu:5.1f}% of cold (target <= 5%)")
        users = dependents(cache)
        if touch is not None:
            touched = os.path.join(tree, touch)
        elif users:
            touched = max(users, key=lambda p: len(users[p]))
        else:
            touched = files[0]
        importers = sorted(set(users.get(touched, ())) - {touched})
        with open(touched, "a", encoding="utf-8") as handle:
            handle.write("\n# touched by bench_cache.py\n")
        after = timed(tapelint(".", jobs=jobs), tree, env)
        alone = timed(tapelint("--no-cache", touched, *importers, jobs=jobs), tree, env)
    target = 0.05 * cold.cpu + alone.cpu
    show(ROW.format("touched (below)", after.wall, after.cpu)
         + f"   target <= {target:.1f} s CPU (5% of cold + its {len(importers)} importers)")
    show(f"    the touched module: {os.path.relpath(touched, tree)}")
    show(ROW.format("  that file and its importers alone", alone.wall, alone.cpu))


def show(line: str) -> None:
    print(line, flush=True)


def bench_linear() -> None:
    """Clean synthetic training code at 20k and 80k lines, and a file full of findings."""
    from tapelint.lint import lint_source
    from tapelint.settings import Settings

    sys.setrecursionlimit(50_000)
    for lines in (20_000, 80_000):
        source = clean_training_code(lines)
        print(linear_row(f"clean training code, {lines // 1000}k lines", source, lint_source, Settings()))
    print(linear_row("200 TL003 findings, 20k lines", generate_findings(200), lint_source, Settings()))


def linear_row(label: str, source: str, lint_source, settings) -> str:
    start = time.process_time()
    result = lint_source(source, "generated.py", settings)
    cpu = time.process_time() - start
    lines = source.count("\n")
    codes = Counter(d.code for d in result.diagnostics)
    shown = ", ".join(f"{c} {n}" for c, n in sorted(codes.items())) or "no findings"
    return f"  {label:34} {cpu:7.2f} s CPU  {1000 * cpu / lines:6.3f} ms/line  ({shown}, {len(result.errors)} errors)"


def clean_training_code(lines: int) -> str:
    """Training functions written correctly (`.item()` accumulation, `zero_grad`, a model class),
    repeated to at least `lines` lines."""
    header = ["import torch", "import torch.nn as nn", ""]
    block = [
        "class Net{i}(nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = nn.Linear(4, 1)",
        "",
        "    def forward(self, x):",
        "        return self.fc(x).relu()",
        "",
        "",
        "def train_{i}(data, epochs=2):",
        "    model = Net{i}()",
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)",
        "    total = 0.0",
        "    for epoch in range(epochs):",
        "        for x, y in data:",
        "            opt.zero_grad()",
        "            loss = ((model(x) - y) ** 2).mean()",
        "            loss.backward()",
        "            opt.step()",
        "            total += loss.item()",
        "    return total / max(len(data), 1)",
        "",
        "",
    ]
    out = list(header)
    i = 0
    while len(out) < lines:  # whole blocks: a file cut mid-class would not parse
        out += [line.format(i=i) for line in block]
        i += 1
    return "\n".join(out) + "\n"


def load() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return " ".join(handle.read().split()[:3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", nargs="+", default=[], help="`torch` or project folders")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--touch", help="the module to touch, relative to the target (default: the most depended on)")
    parser.add_argument("--linear", action="store_true", help="the per-line cost on generated files")
    args = parser.parse_args(argv)
    if not args.target and not args.linear:
        parser.error("give --target and/or --linear")
    for target in args.target:
        root = torch_root() if target == "torch" else os.path.abspath(target)
        if root is None or not os.path.isdir(root):
            sys.exit(f"error: no such target: {target}")
        bench_target(os.path.basename(root.rstrip(os.sep)), root, args.jobs, args.touch)
    if args.linear:
        bench_linear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
