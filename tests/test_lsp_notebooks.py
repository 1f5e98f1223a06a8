"""The language server, round two, through a real LSP client (pytest-lsp):
notebook documents (LSP 3.17), hover Markdown, suppressions and the command
line's exclusions in the editor."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import open_document as open_text
from test_lsp import published

SETUP = "import torch\nx = torch.tensor([0.5, 1.0], requires_grad=True)\nw = torch.tensor([1.0, 2.0], requires_grad=True)\n"
HOISTED = "feats = x.exp()\n"
LOOP = "for step in range(3):\n    loss = (feats * w).sum()\n    loss.backward()\n"
HAZARD = SETUP + HOISTED + LOOP


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    (root / "pyproject.toml").write_text('[tool.tapelint]\nextend-exclude = ["generated_*.py"]\n')
    return root


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tapelint", "lsp"]),
)
async def client(lsp_client: LanguageClient, workspace: Path):
    capabilities = types.ClientCapabilities(
        notebook_document=types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities()
        ),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    )
    result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, root_uri=workspace.as_uri())
    )
    lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def open_notebook(client: LanguageClient, path: Path, cells: list[tuple[str, str]]) -> list[str]:
    """Open a notebook of (kind, source) cells; the cells' URIs."""
    notebook_uri = path.as_uri()
    cell_uris = [f"vscode-notebook-cell:{path}#cell{index}" for index in range(len(cells))]
    for uri in cell_uris:
        client.diagnostics.pop(uri, None)
    kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=kinds[kind], document=uri) for (kind, _), uri in zip(cells, cell_uris)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=uri, language_id="python" if kind == "code" else "markdown",
                                       version=1, text=source)
                for (kind, source), uri in zip(cells, cell_uris)
            ],
        )
    )
    return cell_uris


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_announces_notebook_sync(client: LanguageClient) -> None:
    sync = client.server_capabilities.notebook_document_sync  # type: ignore[attr-defined]
    assert sync is not None
    [selector] = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook"
    assert [cell.language for cell in selector.cells] == ["python"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_notebook_is_linted_as_one_program_and_published_per_cell(client: LanguageClient, workspace: Path) -> None:
    """The hoisted `feats` (cell 3) is reached by the loop in cell 4: the
    finding is published on cell 3's URI at its line within the cell, with
    the failing backward located in cell 4's document."""
    cells = [("code", SETUP), ("markdown", "# Training\n"), ("code", "%matplotlib inline\n" + HOISTED), ("code", LOOP)]
    setup, markdown, hoisted, loop = open_notebook(client, workspace / "train.ipynb", cells)
    [diagnostic] = await published(client, hoisted)
    assert diagnostic.code == "TL001"
    assert diagnostic.range == types.Range(start=types.Position(line=1, character=8),
                                           end=types.Position(line=1, character=15))
    related = {info.message.split(":")[0]: info.location for info in diagnostic.related_information or []}
    assert related["fails-at"].uri == loop
    assert related["fails-at"].range.start == types.Position(line=2, character=4)
    assert related["definition"].uri == hoisted
    # Every other cell is told it has nothing (stale diagnostics are cleared).
    assert await published(client, setup) == []
    assert await published(client, loop) == []
    assert await published(client, markdown) == []

    # Hover and quick fixes on the cell document answer from that snapshot.
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=hoisted), position=diagnostic.range.start)
    )
    assert hover is not None and "**TL001**" in hover.contents.value  # type: ignore[union-attr]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=hoisted), range=diagnostic.range,
                               context=types.CodeActionContext(diagnostics=[diagnostic]))
    )
    titles = [a.title for a in actions or [] if isinstance(a, types.CodeAction)]
    assert "TL001: detach `feats` where it is created (it then gets no gradient) (unsafe)" in titles
    [detach] = [a for a in actions or [] if isinstance(a, types.CodeAction) and "detach" in a.title]
    [edit] = detach.edit.changes[hoisted]  # type: ignore[union-attr,index]
    assert edit.range.start.line == 1 and edit.new_text.endswith(".detach()")


@pytest.mark.asyncio(loop_scope="module")
async def test_editing_a_cell_republishes_the_notebook(client: LanguageClient, workspace: Path) -> None:
    cells = [("code", SETUP + HOISTED), ("code", LOOP)]
    first, second = open_notebook(client, workspace / "edit.ipynb", cells)
    assert [d.code for d in await published(client, first)] == ["TL001"]
    client.diagnostics.pop(first, None)
    fixed = SETUP + "feats = x.exp().detach()\n"
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=(workspace / "edit.ipynb").as_uri(), version=2),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(uri=first, version=2),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                    )]
                )
            ),
        )
    )
    assert await published(client, first) == []

    client.diagnostics.pop(second, None)
    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=(workspace / "edit.ipynb").as_uri()),
            cell_text_documents=[types.TextDocumentIdentifier(uri=first), types.TextDocumentIdentifier(uri=second)],
        )
    )
    assert await published(client, second) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_puts_a_blank_line_before_the_rule(client: LanguageClient, workspace: Path) -> None:
    """`---` right under a paragraph is a setext heading underline in
    CommonMark, which would render the message as a heading."""
    uri = open_text(client, workspace / "hover.py", HAZARD)
    [diagnostic] = await published(client, uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start)
    )
    value = hover.contents.value  # type: ignore[union-attr]
    message, documentation = value.split("\n\n---\n\n", 1)
    assert message.startswith("**TL001** `feats` is computed once") and "\n---" not in message
    assert documentation.startswith("# hoisted-tracked-tensor (TL001)")


@pytest.mark.asyncio(loop_scope="module")
async def test_the_editor_honours_suppressions_like_the_command_line(client: LanguageClient, workspace: Path) -> None:
    uri = open_text(client, workspace / "suppressed.py", HAZARD.replace(HOISTED, "feats = x.exp()  # noqa: hoisted-tracked-tensor\n"))
    assert await published(client, uri) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_the_editor_honours_exclusions_like_the_command_line(client: LanguageClient, workspace: Path) -> None:
    excluded = open_text(client, workspace / "generated_train.py", HAZARD)
    assert await published(client, excluded) == []
    # An .ipynb opened as text is JSON: only its notebook document is linted.
    raw = open_text(client, workspace / "raw.ipynb", '{"cells": []}')
    assert await published(client, raw) == []
