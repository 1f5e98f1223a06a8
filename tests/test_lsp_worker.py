"""Issue 10, the language server's lint process: a document that kills the
linter (a native abort, a file over its time or memory budget) gets one
diagnostic saying it was not checked, the server lives on, and the next
edit is linted by a fresh process. Through a real LSP client (pytest-lsp),
and on the worker handle directly."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from processes import alive
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import HAZARD, change_document, open_document, published
from test_robust_runner import SLOW, WIDE, children

import tapelint.lsp.worker
from tapelint.lsp.worker import ABORT_MARKER, FAULTS_VARIABLE, LintWorker, Request
from tapelint.settings import Settings

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="budgets are the kernel's (Linux)")
ABORTING = HAZARD + ABORT_MARKER + "\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    budget = root / "budget"
    budget.mkdir()
    (budget / "pyproject.toml").write_text("[tool.tapelint]\nfile-timeout = 0.5\n")
    return root


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tapelint", "lsp"],
                              server_env={**os.environ, FAULTS_VARIABLE: "1"}),
)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


def codes(diagnostics: list[types.Diagnostic]) -> list[str | int | None]:
    return [d.code for d in diagnostics]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_worker_that_dies_mid_lint_is_one_diagnostic_and_the_next_edit_works(
    client: LanguageClient, workspace: Path
) -> None:
    uri = open_document(client, workspace / "train.py", HAZARD)
    assert codes(await published(client, uri)) == ["TL001"]

    change_document(client, uri, 2, ABORTING)
    [diagnostic] = await published(client, uri)
    assert diagnostic.message == "not checked by tapelint: internal error: the worker process died while checking this file"
    assert diagnostic.range.start == types.Position(line=0, character=0)
    assert any("died while checking" in m.message for m in client.log_messages)

    change_document(client, uri, 3, HAZARD)  # the next edit: a fresh worker lints it
    assert codes(await published(client, uri)) == ["TL001"]
    other = open_document(client, workspace / "other.py", HAZARD)
    assert codes(await published(client, other)) == ["TL001"]


@linux_only
@pytest.mark.asyncio(loop_scope="module")
async def test_the_configured_time_budget_holds_in_the_editor(client: LanguageClient, workspace: Path) -> None:
    uri = open_document(client, workspace / "budget" / "slow.py", SLOW)
    [diagnostic] = await published(client, uri)
    assert diagnostic.message.startswith("not checked by tapelint: took more than 0.5 s of CPU time, the per-file budget")
    change_document(client, uri, 2, HAZARD)
    assert codes(await published(client, uri)) == ["TL001"]


def test_the_worker_restarts_after_a_death_and_stays_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAULTS_VARIABLE, "1")
    worker = LintWorker()
    try:
        request = Request(HAZARD, "/w/train.py", Settings(), notebook=False)
        assert [d.code for d in worker.lint(request).result.diagnostics] == ["TL001"]
        first = worker.process
        assert worker.lint(request).result.diagnostics and worker.process is first  # one process, reused

        died = worker.lint(Request(ABORTING, "/w/train.py", Settings(), notebook=False))
        assert died.crashed and died.result.errors[0].message.startswith("internal error: the worker process died")
        assert worker.started == 2 and worker.process is not first  # restarted at once, for the next edit
        assert [d.code for d in worker.lint(request).result.diagnostics] == ["TL001"]
    finally:
        worker.close()
    assert worker.process is None and first is not None and first.returncode is not None


MODELS = """\
import torch


def features(x, w):
    return (x * w).tanh()
"""
TRAIN = """\
import torch

from models import features

w = torch.ones(3, requires_grad=True)
feats = features(torch.ones(3), w)
for _ in range(2):
    (feats * {scale}).sum().backward()
"""


def test_a_warm_worker_answers_each_edit_as_a_cold_check_does(tmp_path: Path) -> None:
    """The lint process keeps imports, parses and summaries between edits
    (and settles its heap after each): every answer, the first and those
    from warm state, even after an imported module changed on disk, is
    what a fresh process linting the same text gives."""
    (tmp_path / "models.py").write_text(MODELS)
    path = str(tmp_path / "train.py")
    settings = Settings(project_root=str(tmp_path))
    worker = LintWorker()
    try:
        answers = []
        for scale, models in ((2, MODELS), (3, MODELS), (4, "\n\n" + MODELS), (5, "\n\n" + MODELS)):
            (tmp_path / "models.py").write_text(models)
            text = TRAIN.format(scale=scale)
            answers.append((worker.lint(Request(text, path, settings, notebook=False)).result, text))
            assert answers[-1][0] == _cold_lint(text, path, str(tmp_path)), text
        assert worker.started == 1
    finally:
        worker.close()
    related = [[r.path for r in result.diagnostics[0].related] for result, _ in answers]
    assert all(str(tmp_path / "models.py") in paths for paths in related)  # the origin inside the import
    lines = [[r.range.start.line for r in result.diagnostics[0].related if r.path.endswith("models.py")]
             for result, _ in answers]
    assert lines[0] == lines[1] and lines[2] == lines[3] and lines[2][0] == lines[0][0] + 2  # the edit moved it


def _cold_lint(text: str, path: str, root: str) -> object:
    """The result of linting `text` as `path` in a process of its own."""
    script = ("import pickle, sys\n"
              "from tapelint.document import lint_document\n"
              "from tapelint.settings import Settings\n"
              "text, path, root = pickle.loads(sys.stdin.buffer.read())\n"
              "sys.stdout.buffer.write(pickle.dumps(lint_document(text, path, Settings(project_root=root))))\n")
    done = subprocess.run([sys.executable, "-c", script], input=pickle.dumps((text, path, root)),
                          capture_output=True, timeout=120, check=True)
    return pickle.loads(done.stdout)


@linux_only
def test_the_memory_budget_holds_in_the_worker() -> None:
    worker = LintWorker()
    try:
        over = worker.lint(Request(WIDE, "/w/wide.py", Settings(file_memory_mb=100), notebook=False))
        [error] = over.result.errors
        assert error.message.startswith("needed more than 100 MB, the per-file memory budget")
        assert not over.crashed
        fine = worker.lint(Request(HAZARD, "/w/train.py", Settings(), notebook=False))
        assert [d.code for d in fine.result.diagnostics] == ["TL001"]
    finally:
        worker.close()


def _frame(method: str, params: object, ident: int | None = None) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@linux_only
@pytest.mark.parametrize("ending", ["killed", "exit"])
def test_the_lint_process_ends_with_the_server(tmp_path: Path, ending: str) -> None:
    server = subprocess.Popen([sys.executable, "-m", "tapelint", "lsp"], cwd=tmp_path,
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert server.stdin is not None
    try:
        server.stdin.write(_frame("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 1)
                           + _frame("initialized", {}))
        server.stdin.flush()
        deadline = time.monotonic() + 30
        while not children(server.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        [worker] = children(server.pid)  # started at `initialized`, before any document
        if ending == "killed":
            server.kill()
        else:
            server.stdin.write(_frame("shutdown", None, 2) + _frame("exit", None))
            server.stdin.flush()
        server.wait(timeout=30)
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


@linux_only
def test_a_stuck_lint_process_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tapelint.lsp.worker, "_WALL_GRACE_SECONDS", 1.0)
    worker = LintWorker()
    try:
        worker.start()
        assert worker.process is not None
        stuck = worker.process
        os.kill(stuck.pid, signal.SIGSTOP)  # alive, never answering: no CPU budget can end it
        [error] = worker.lint(Request(HAZARD, "/w/train.py", Settings(file_timeout=0.1), notebook=False)).result.errors
        assert error.message == ("no answer from the lint process within 1.4 s (wall clock; the CPU budget is 0.1 s,"
                                 " config `file-timeout`); not checked")
        assert stuck.returncode == -signal.SIGKILL and worker.process is not stuck
        assert [d.code for d in worker.lint(Request(HAZARD, "/w/train.py", Settings(), False)).result.diagnostics] == ["TL001"]
    finally:
        worker.close()
