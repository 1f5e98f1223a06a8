"""Issue 10: a file name that is not UTF-8 never crashes a reporter and never
becomes a lone surrogate in JSON: percent-encoded bytes in SARIF and LSP
URIs, `\\xHH` elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HAZARD = b"import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
NAME = b"caf\xe9.py"  # Latin-1, not UTF-8

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="file names are bytes only on Linux")


def run(tmp_path: Path, fmt: str, *paths: str) -> str:
    os.makedirs(os.fsencode(tmp_path), exist_ok=True)
    with open(os.path.join(os.fsencode(tmp_path), NAME), "wb") as handle:
        handle.write(HAZARD)
    done = subprocess.run(
        [sys.executable, "-m", "tapelint", "check", "--isolated", "--format", fmt, *paths],
        cwd=tmp_path, capture_output=True, timeout=120,
    )
    assert done.returncode == 1, done.stderr
    text = done.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert "\\ud" not in text.lower()  # no escaped lone surrogate either
    return text


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_sarif_percent_encodes_the_bytes(tmp_path: Path, where: str) -> None:
    text = run(tmp_path, "sarif", "." if where == "relative" else str(tmp_path))
    [result] = json.loads(text)["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.endswith("caf%E9.py")


def test_json_writes_the_documented_escape(tmp_path: Path) -> None:
    document = json.loads(run(tmp_path, "json", "."))
    assert {d["path"] for d in document["diagnostics"]} == {"caf\\xe9.py"}


def test_lsp_uri_is_percent_encoded(tmp_path: Path) -> None:
    [line] = run(tmp_path, "lsp", ".").splitlines()
    assert json.loads(line)["uri"].endswith("/caf%E9.py")
