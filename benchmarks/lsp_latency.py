"""Editor latency (issue 12): how long after the debounce `tapelint lsp`
publishes diagnostics for a `didChange` on a 300-line file, the project's
other module (which the file imports) kept warm in the lint process.

    python benchmarks/lsp_latency.py [--edits 30] [--lines 300]

Starts the server as an editor does (stdio), opens the file, then sends
`--edits` changes one at a time, each waiting for its diagnostics; prints
the latency per edit minus the server's debounce (median, 90th percentile,
max) and, on Linux, the CPU time the server and its lint process spent per
edit (what the wall time is made of on an idle machine), and, for
comparison, the same file (and the file without its one
finding: no positions, no fixes to compute) linted in this process, wall
and CPU time (wall time on a shared machine swings by 2x).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from tapelint.lsp.server import DEBOUNCE_SECONDS

MODELS = '''\
import torch


def make_weights(size):
    return torch.randn(size, requires_grad=True)


def features(x, w):
    return (x * w).tanh()


class Head(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(size))

    def forward(self, x):
        return features(x, self.w).sum()
'''

STEP = '''\
def step_{i}(data, w, head):
    total = 0.0
    for batch in data:
        out = features(batch, w) + {i}
        loss = head(out) + out.mean()
        loss.backward()
        total += loss.item()
    return total

'''


def training_file(lines: int) -> str:
    """A training script of about `lines` lines that imports the project's
    `models`, with one hazard at its end (so diagnostics are never empty)."""
    head = "import torch\n\nfrom models import Head, features, make_weights\n\n"
    body = []
    count = 0
    while head.count("\n") + sum(s.count("\n") for s in body) < lines - 8:
        body.append(STEP.format(i=count))
        count += 1
    tail = ("w = make_weights(3)\nfeats = features(torch.ones(3), w)\nfor _ in range(2):\n"
            "    (feats * 2).sum().backward()\n")
    return head + "".join(body) + tail


class Client:
    """A minimal LSP client over the server's stdio."""

    def __init__(self, command: list[str], cwd: str) -> None:
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.published: queue.SimpleQueue[tuple[float, dict[str, Any]]] = queue.SimpleQueue()
        self.responses: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        self.next_id = 0

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            length = 0
            while (line := stream.readline().strip()):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not length:
                return
            message = json.loads(stream.read(length))
            if message.get("method") == "textDocument/publishDiagnostics":
                self.published.put((time.perf_counter(), message["params"]))
            elif "id" in message and "method" not in message:
                self.responses.put(message)

    def send(self, method: str, params: Any, request: bool = False) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.send(method, params, request=True)
        return self.responses.get(timeout=60)

    def diagnostics_for(self, version: int) -> tuple[float, list[Any]]:
        """When the diagnostics of `version` arrived, and what they were."""
        while True:
            at, params = self.published.get(timeout=60)
            if params.get("version") == version:
                return at, params["diagnostics"]

    def close(self) -> None:
        self.request("shutdown", None)
        self.send("exit", None)
        self.process.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--lines", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tapelint-lsp-latency-") as root:
        project = Path(root)
        (project / "pyproject.toml").write_text("[tool.tapelint]\n")
        (project / "models.py").write_text(MODELS)
        text = training_file(args.lines)
        train = project / "train.py"
        train.write_text(text)
        uri = train.as_uri()
        client = Client([sys.executable, "-m", "tapelint", "lsp"], root)
        client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(), "capabilities": {}})
        client.send("initialized", {})
        start = time.perf_counter()
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        opened, found = client.diagnostics_for(1)
        print(f"{text.count(chr(10))}-line file importing a project module; first diagnostics "
              f"{(opened - start) * 1000:.0f} ms after didOpen (lint process started at initialize), "
              f"{len(found)} diagnostic(s)")
        latencies, cpus, server_cpus = [], [], []
        for version in range(2, args.edits + 2):
            edited = text.replace("+ 0\n", f"+ {version}\n", 1)  # a keystroke's worth of change
            cpu, own = tree_cpu_seconds(client.process.pid), cpu_seconds(client.process.pid)
            sent = time.perf_counter()
            client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [{"text": edited}]})
            arrived, found = client.diagnostics_for(version)
            latencies.append((arrived - sent - DEBOUNCE_SECONDS) * 1000)
            if cpu is not None and own is not None:
                cpus.append(((tree_cpu_seconds(client.process.pid) or 0.0) - cpu) * 1000)
                server_cpus.append(((cpu_seconds(client.process.pid) or 0.0) - own) * 1000)
        client.close()
    print(f"didChange -> publishDiagnostics, minus the {DEBOUNCE_SECONDS * 1000:.0f} ms debounce, over "
          f"{len(latencies)} edits: {_spread(latencies)}")
    if cpus:
        print(f"CPU of the server and its lint process per edit: {_spread(cpus)}; of the server alone: "
              f"{_spread(server_cpus)}")
    for label, source in (("the same file", text), ("the same file without its finding", _without_finding(text))):
        wall, cpu = _in_process_ms(source)
        print(f"{label} linted in this process (no server): median {wall:.1f} ms wall, {cpu:.1f} ms CPU")
    return 0


def _spread(figures: list[float]) -> str:
    ordered = sorted(figures)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered):.1f} ms, p90 {p90:.1f} ms, max {ordered[-1]:.1f} ms"


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of `pid` (Linux's /proc; None elsewhere or
    once it is gone). Clock ticks: 10 ms each."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def tree_cpu_seconds(pid: int) -> float | None:
    """`cpu_seconds` of `pid` and its descendants."""
    total = cpu_seconds(pid)
    if total is None:
        return None
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                for child in children.read().split():
                    total += tree_cpu_seconds(int(child)) or 0.0
    except (OSError, ValueError, IndexError):
        return None
    return total


def _without_finding(text: str) -> str:
    return text[:text.index("w = make_weights(3)")]


def _in_process_ms(text: str) -> tuple[float, float]:
    """Median wall and CPU milliseconds of `lint_document` on `text` with the
    server's keystroke changed each time (the same text again would reuse
    its cached parse), the heap settled after each as in the server's lint
    process."""
    from tapelint.document import lint_document
    from tapelint.runner import settle_heap
    from tapelint.settings import Settings

    with tempfile.TemporaryDirectory() as project:
        Path(project, "models.py").write_text(MODELS)
        path = os.path.join(project, "train.py")
        settings = Settings(project_root=project)
        lint_document(text, path, settings)  # warm, as the server's process is
        settle_heap()
        walls, cpus = [], []
        for version in range(2, 12):
            edited = text.replace("+ 0\n", f"+ {version}\n", 1)  # the server's edits
            wall, cpu = time.perf_counter(), time.process_time()
            lint_document(edited, path, settings)
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            settle_heap()
    return statistics.median(walls), statistics.median(cpus)


if __name__ == "__main__":
    sys.exit(main())
