"""`tapelint check` imports only the linter: an editor piping a buffer to
it on every save must not pay for explain, the engine commands, the
baseline or the other output formats (issue 12's latency)."""

from __future__ import annotations

import json
import subprocess
import sys

NOT_NEEDED_BY_CHECK = (
    "tapelint.explain",
    "tapelint.engine_commands",
    "tapelint.confirm",
    "tapelint.baseline",
    "tapelint.reporters.sarif",
    "tapelint.reporters.github",
    "tapelint.reporters.lsp",
    "tapelint.reporters.json",
    "tapelint.graph",
    "tapelint.graph_commands",
    "tapelint_engine",
)
PROGRAM = """
import contextlib, io, json, sys
source = "import torch\\nw = torch.ones(2, requires_grad=True)\\nloss = (w * w).sum()\\nloss.backward()\\nloss.backward()\\n"
sys.stdin = io.TextIOWrapper(io.BytesIO(source.encode()))
import tapelint.cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = tapelint.cli.main(["check", "--stdin-filename", "x.py", "-"])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def test_a_stdin_check_imports_only_the_linter() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["code"] == 1 and "x.py:5:1: TL004" in report["out"]  # it did lint
    loaded = [name for name in NOT_NEEDED_BY_CHECK if name in report["modules"]]
    assert loaded == []
    assert "tapelint.reporters.text" in report["modules"]


def test_the_lazy_commands_still_load_their_modules(capsys) -> None:
    from tapelint.cli import main

    assert main(["explain", "Trying to backward through the graph a second time"]) in (0, 1)
    assert "tapelint.explain" in sys.modules
    assert "TL" in capsys.readouterr().out


CACHED_RUN = """
import contextlib, io, json, sys
import tapelint.cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = tapelint.cli.main(["check", "--cache-dir", sys.argv[1], "train.py"])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""
TRAIN = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"


def test_a_run_whose_results_are_all_cached_loads_no_parser_analysis_or_rule(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TAPELINT_NO_CACHE")
    (tmp_path / "train.py").write_text(TRAIN)

    def check() -> dict:
        done = subprocess.run([sys.executable, "-c", CACHED_RUN, str(tmp_path / "cache")], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    cold, warm = check(), check()
    assert cold["code"] == warm["code"] == 1 and cold["out"] == warm["out"]
    assert "train.py:5:1: TL004" in warm["out"]
    heavy = ("libcst", "tapelint.lint", "tapelint.analysis.driver", "tapelint.rules.base",
             "tapelint.rules.tl004_repeated_backward")
    assert all(name in cold["modules"] for name in heavy)  # the cold run linted
    assert [name for name in heavy if name in warm["modules"]] == []
