"""Random training-like programs for crash sweeps: tensors, models, loops,
backward calls, accumulations, control flow, and now and then a broken
token, a deep nesting or a notebook with magics. Not a fuzzer of Python's
grammar (hypothesmith is one): programs that look like what users write,
with the hazards tapelint looks for, so the analysis itself is exercised."""

from __future__ import annotations

import json
import random

_NAMES = ("x", "w", "h", "loss", "out", "total", "feats", "pred", "state", "acc")
_TENSORS = (
    "torch.ones({n}, requires_grad=True)",
    "torch.randn({n}, {n})",
    "torch.zeros({n})",
    "model({v})",
    "{v}.detach()",
    "({v} * {u}).sum()",
    "{v}.exp()",
    "{v} @ {u}",
    "F.mse_loss({v}, {u})",
    "{v}.clone()",
    "torch.tensor([{n}.0, 1.0], requires_grad={flag})",
    "nn.Parameter(torch.randn({n}))",
)
_STATEMENTS = (
    "{v} = {expr}",
    "{v}.backward()",
    "{v}.backward(retain_graph={flag})",
    "{v} += {u}",
    "{v}.append({u})",
    "{v} = {v} + {u}",
    "torch.autograd.grad({v}, [{u}])",
    "opt.zero_grad()",
    "opt.step()",
    "print({v})",
    "{v}.add_({u})",
    "del {v}",
    "{v}, {u} = {u}, {v}",
    "with torch.no_grad():\n{indent}    {v} = {expr}",
    "if {v} is not None:\n{indent}    {v}.backward()",
    "try:\n{indent}    {v}.backward()\n{indent}except RuntimeError:\n{indent}    pass",
    "match {v}:\n{indent}    case None:\n{indent}        {u}.backward()",
    "{v} = [{u} for _ in range({n})]",
    "{v} = lambda: {u}.sum()",
    "# tapelint: ignore[TL004]",
    "{v}.backward()  # noqa: TL004",
)
_HEADERS = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n",
    "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n",
    "from torch import *\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n",
)
# Hazards as users write them (one per rule family), woven in at random.
_SNIPPETS = (
    "total = 0\nfor step in range(3):\n    loss = (w * w).sum()\n    loss.backward()\n    total += loss\n",
    "feats = x.exp()\nfor step in range(3):\n    loss = (feats * w).sum()\n    loss.backward()\n",
    "rnn = nn.RNN(3, 4)\nh = None\nfor step in range(3):\n    out, h = rnn(torch.randn(5, 1, 3), h)\n"
    "    out.sum().backward()\n",
    "y = x.exp()\na = (y * 2).sum()\nb = (y * 3).sum()\na.backward()\nb.backward()\n",
    "y = x.exp()\na = (y * 2).sum()\nb = (y * 3).sum()\na.backward(retain_graph=True)\nb.backward()\n",
    "loss = (w * x).sum()\nloss.backward()\nloss.backward()\n",
)
_CORRUPTIONS = ("(", ")", ":", "\\", "'", '"""', "\t", "\ufeff", "lambda", " if ", "%", "\x0c")


class ProgramGenerator:
    """Deterministic for a given seed."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def program(self) -> str:
        r = self.random
        lines = [r.choice(_HEADERS), "model = nn.Linear(3, 3)", "opt = torch.optim.SGD(model.parameters(), lr=0.1)"]
        lines += ["x = torch.randn(3, requires_grad=True)", "w = torch.randn(3, requires_grad=True)"]
        lines += [f"{name} = {self._expr()}" for name in r.sample(_NAMES, 3)]
        for _ in range(r.randint(1, 3)):
            if r.random() < 0.6:
                lines.append(r.choice(_SNIPPETS))
            self._block(lines, "", depth=0)
        text = "\n".join(lines) + "\n"
        roll = r.random()
        if roll < 0.15:
            text = self._corrupt(text)
        elif roll < 0.18:
            text = self._deep(text)
        return text

    def notebook(self) -> str:
        r = self.random
        cells = []
        for _ in range(r.randint(1, 4)):
            source = self.program()
            if r.random() < 0.5:
                source = r.choice(("%matplotlib inline\n", "!pip install x\n", "%%time\n", "x = !ls\n", "%%bash\n")) + source
            kind = "code" if r.random() < 0.85 else "markdown"
            cells.append({"cell_type": kind, "source": source.splitlines(keepends=True), "metadata": {}, "outputs": []})
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    def _block(self, lines: list[str], indent: str, depth: int) -> None:
        r = self.random
        for _ in range(r.randint(2, 7)):
            roll = r.random()
            if roll < 0.15 and depth < 3:
                header = r.choice(("for step in range({n}):", "while {v}:", "def step_{n}({v}):", "class M{n}(nn.Module):",
                                   "if {v}:", "with torch.enable_grad():", "async def f{n}():"))
                lines.append(indent + self._fill(header, indent))
                self._block(lines, indent + "    ", depth + 1)
            else:
                lines.append(indent + self._fill(r.choice(_STATEMENTS), indent))
            if roll > 0.97 and indent:
                lines.append(indent + "return " + r.choice(_NAMES))

    def _expr(self) -> str:
        return self._fill(self.random.choice(_TENSORS), "")

    def _fill(self, template: str, indent: str) -> str:
        r = self.random
        v, u = r.sample(_NAMES, 2)
        return template.format(
            v=v, u=u, n=r.randint(1, 4), flag=r.choice(("True", "False")), indent=indent,
            expr=self._fill(r.choice(_TENSORS), indent) if "{expr}" in template else "",
        )

    def _corrupt(self, text: str) -> str:
        r = self.random
        for _ in range(r.randint(1, 3)):
            at = r.randrange(len(text))
            if r.random() < 0.5:
                text = text[:at] + r.choice(_CORRUPTIONS) + text[at:]
            else:
                text = text[:at] + text[at + r.randint(1, 5):]
        return text

    def _deep(self, text: str) -> str:
        r = self.random
        depth = r.choice((50, 300, 1500, 5000))
        shape = r.choice(("(" * depth + "w" + ")" * depth, "w" + " + w.sum()" * depth, "-" * depth + "w",
                          "w" + ".T" * depth, "lambda: " * depth + "w", "[" * depth + "]" * depth))
        return text + f"deep = {shape}\ndeep.backward()\n"
