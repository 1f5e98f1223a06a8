"""The language server end to end: a real LSP client (pytest-lsp) drives
`tapelint lsp` in a subprocess over stdio, as an editor would."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.workspace import PositionCodec
from pytest_lsp import ClientServerConfig, LanguageClient

from tapelint.cli import main
from tapelint.diagnostics import Diagnostic, Edit, Fix, FixKind, Range, Safety, Semantics, Severity
from tapelint.lsp.convert import DocumentText, quick_fixes, to_lsp_diagnostic

# The 🔥 is two UTF-16 code units but one code point: the range must be
# converted, or the fix lands one character off.
HAZARD = '''\
import torch

x = torch.tensor([0.5, 1.0], requires_grad=True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
tag = "🔥"; feats = x.exp()
for step in range(3):
    loss = (feats * w).sum()
    loss.backward()
'''
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    quiet = root / "quiet"
    quiet.mkdir()
    (quiet / "pyproject.toml").write_text(
        '[tool.tapelint]\nper-file-ignores = {"train.py" = ["hoisted-tracked-tensor"]}\nextend-exclude = ["legacy_*.py"]\n'
    )
    broken = root / "broken_config"
    broken.mkdir()
    (broken / "pyproject.toml").write_text("[tool.tapelint]\nselekt = []\n")
    return root


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tapelint", "lsp"]),
)
async def client(lsp_client: LanguageClient, workspace: Path):
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
        ),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    )
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, root_uri=workspace.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, path: Path, text: str) -> str:
    uri = path.as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    return uri


def change_document(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def published(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The next diagnostics published for `uri` (the caller cleared the old ones)."""

    async def arrived() -> list[types.Diagnostic]:
        while uri not in client.diagnostics:
            await asyncio.sleep(0.02)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(arrived(), TIMEOUT)


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 columns), last first, as a client does."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        line = lines[position.line]
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return offsets[position.line] + index
            units += 2 if ord(char) > 0xFFFF else 1
        return offsets[position.line] + len(line)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


@pytest.mark.asyncio(loop_scope="module")
async def test_quick_fix_makes_the_diagnostic_disappear(client: LanguageClient, workspace: Path) -> None:
    uri = open_document(client, workspace / "train.py", HAZARD)
    [diagnostic] = await published(client, uri)

    assert diagnostic.code == "TL001"
    assert diagnostic.source == "tapelint"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    # `x.exp()` on line 5: code point column 19, UTF-16 column 20 (after 🔥).
    assert diagnostic.range == types.Range(
        start=types.Position(line=4, character=20), end=types.Position(line=4, character=27)
    )
    related = {info.message.split(":")[0]: info.location for info in diagnostic.related_information or []}
    assert set(related) == {"definition", "first-backward", "fails-at"}
    assert related["fails-at"].uri == uri
    assert related["fails-at"].range.start == types.Position(line=7, character=4)

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert actions is not None
    assert all(isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix for a in actions)
    by_title = {a.title: a for a in actions if isinstance(a, types.CodeAction)}
    action = by_title["TL001: detach `feats` where it is created (it then gets no gradient) (unsafe)"]
    assert not action.is_preferred  # unsafe: it changes which tensors get gradients
    assert action.edit is not None and action.edit.document_changes is not None
    [document_edit] = action.edit.document_changes
    assert isinstance(document_edit, types.TextDocumentEdit)
    assert document_edit.text_document.version == 1

    fixed = apply(HAZARD, list(document_edit.edits))
    assert 'tag = "🔥"; feats = x.exp().detach()\n' in fixed
    change_document(client, uri, 2, fixed)
    assert await published(client, uri) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_columns_follow_lsp_line_breaks(client: LanguageClient, workspace: Path) -> None:
    # A form feed ends no line in LSP or Python; str.splitlines would count one more line.
    uri = open_document(client, workspace / "paged.py", HAZARD.replace("import torch\n", "import torch  # \x0c\n"))
    [diagnostic] = await published(client, uri)
    assert diagnostic.range.start == types.Position(line=4, character=20)


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_the_rule_documentation(client: LanguageClient, workspace: Path) -> None:
    uri = open_document(client, workspace / "hover.py", HAZARD)
    [diagnostic] = await published(client, uri)

    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("**TL001** `feats` is computed once")
    assert "# hoisted-tracked-tensor (TL001)" in hover.contents.value
    assert "## Why is this bad" in hover.contents.value

    elsewhere = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0))
    )
    assert elsewhere is None


@pytest.mark.asyncio(loop_scope="module")
async def test_broken_document_reports_tl900_and_the_server_lives_on(client: LanguageClient, workspace: Path) -> None:
    uri = open_document(client, workspace / "broken.py", "import torch\n\ndef step(:\n    pass\n")
    [diagnostic] = await published(client, uri)
    assert diagnostic.code == "TL900"
    assert diagnostic.range.start.line == 2

    # Typing on in a burst: the server answers for the latest text only.
    for version, text in enumerate(["import torch\n\ndef step(x", "import torch\n\ndef step(x):", HAZARD], 2):
        change_document(client, uri, version, text)
    assert [d.code for d in await published(client, uri)] == ["TL001"]


@pytest.mark.asyncio(loop_scope="module")
async def test_requests_are_answered_while_a_large_file_is_linted(client: LanguageClient, workspace: Path) -> None:
    small = open_document(client, workspace / "small.py", HAZARD)
    [diagnostic] = await published(client, small)
    # About a second of analysis on this machine: the lint runs in a worker thread.
    large_text = "import torch\n\n" + "".join(
        f"def step{i}(x, w):\n    feats = x.exp()\n    for s in range(3):\n"
        "        loss = (feats * w).sum()\n        loss.backward()\n\n"
        for i in range(1000)
    )
    large = open_document(client, workspace / "large.py", large_text)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=small), position=diagnostic.range.start)
    )
    assert hover is not None
    assert large not in client.diagnostics  # answered before the large file's lint finished
    await published(client, large)


@pytest.mark.asyncio(loop_scope="module")
async def test_configuration_from_the_nearest_pyproject(client: LanguageClient, workspace: Path) -> None:
    ignored = open_document(client, workspace / "quiet" / "train.py", HAZARD)
    assert await published(client, ignored) == []
    excluded = open_document(client, workspace / "quiet" / "legacy_train.py", HAZARD)
    assert await published(client, excluded) == []
    # The same text in the same folder, under neither glob, is reported.
    other = open_document(client, workspace / "quiet" / "model.py", HAZARD)
    assert [d.code for d in await published(client, other)] == ["TL001"]


@pytest.mark.asyncio(loop_scope="module")
async def test_broken_configuration_is_shown_and_defaults_apply(client: LanguageClient, workspace: Path) -> None:
    uri = open_document(client, workspace / "broken_config" / "train.py", HAZARD)
    assert [d.code for d in await published(client, uri)] == ["TL001"]
    [message] = [m for m in client.messages if "selekt" in m.message]
    assert message.type == types.MessageType.Error
    assert str(workspace / "broken_config" / "pyproject.toml") in message.message


def _diagnostic(*fixes: Fix) -> Diagnostic:
    return Diagnostic(
        code="TL003",
        name="tracked-accumulation",
        severity=Severity.ERROR,
        message="...",
        path="/w/a.py",
        range=Range.of(1, 0, 1, 5),
        fails_under=(Semantics.TORCH,),
        fixes=fixes,
    )


def test_quick_fixes_skip_display_only_and_prefer_safe_ones() -> None:
    edit = (Edit(Range.of(1, 0, 1, 5), "total"),)
    diagnostic = _diagnostic(
        Fix(FixKind.ITEM, Safety.SAFE, "accumulate `loss.item()`", edit),
        Fix(FixKind.RETAIN_GRAPH, Safety.DISPLAY_ONLY, "pass retain_graph=True", edit),
        Fix(FixKind.DETACH, Safety.UNSAFE, "accumulate `loss.detach()`"),
    )
    text = DocumentText("file:///w/a.py", "/w/a.py", 7, ("total += loss\n",), PositionCodec())
    [action] = quick_fixes(diagnostic, to_lsp_diagnostic(diagnostic, text), text, versioned=False)
    assert action.title == "TL003: accumulate `loss.item()`"
    assert action.is_preferred
    # A client without versioned document changes gets a plain `changes` map.
    assert action.edit == types.WorkspaceEdit(
        changes={
            "file:///w/a.py": [
                types.TextEdit(
                    range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=5)),
                    new_text="total",
                )
            ]
        }
    )


def test_without_pygls_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a plain `pip install tapelint` leaves: the server's first import fails.
    monkeypatch.setitem(sys.modules, "lsprotocol", None)
    monkeypatch.delitem(sys.modules, "tapelint.lsp.server", raising=False)
    assert main(["lsp"]) == 2
    assert "pip install -e '.[lsp]'" in capsys.readouterr().err


def test_exactly_one_quick_fix_is_preferred_the_one_fix_applies() -> None:
    """TL003 may have two safe fixes (`.item()` and `.detach()`): only the
    first, the one `--fix` applies, is preferred; an unsafe one never is."""
    edit = (Edit(Range.of(1, 0, 1, 5), "total"),)
    text = DocumentText("file:///w/a.py", "/w/a.py", 7, ("total += loss\n",), PositionCodec())
    two_safe = _diagnostic(Fix(FixKind.ITEM, Safety.SAFE, "item", edit), Fix(FixKind.DETACH, Safety.SAFE, "detach", edit))
    actions = quick_fixes(two_safe, to_lsp_diagnostic(two_safe, text), text, versioned=False)
    assert [a.is_preferred for a in actions] == [True, False]
    unsafe = _diagnostic(Fix(FixKind.DETACH, Safety.UNSAFE, "detach", edit), Fix(FixKind.ITEM, Safety.UNSAFE, "i", edit))
    actions = quick_fixes(unsafe, to_lsp_diagnostic(unsafe, text), text, versioned=False)
    assert [a.is_preferred for a in actions] == [False, False]
