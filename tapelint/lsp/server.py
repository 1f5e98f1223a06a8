"""`tapelint lsp`: a language server over stdio, built on pygls.

Diagnostics are published on open and save at once, and on change after a
pause in typing (text documents and, LSP 3.17, notebook documents: see
`tapelint.lsp.notebook`) (a newer change cancels the pending run). Linting is
driven from a worker thread, so hover and code actions stay answered while a
large file is analysed, and done in a long-lived child process
(`tapelint.lsp.worker`), so that no document can take the server down: one
the child could not lint gets a single diagnostic saying why. A result is
published only if the document is still at the version that was linted. Each published finding is kept with its document
snapshot: code actions and hover answer from it, never from a re-lint.

A document is linted as the command line lints its file: its inline
suppressions honoured, nothing published for a file the configuration
excludes (`--force-exclude` semantics), configuration looked up from its path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from tapelint import __version__
from tapelint.config import ConfigError, Resolver
from tapelint.diagnostics import Diagnostic, FileError, FileResult, split_lines
from tapelint.lsp.convert import DocumentText, contains, not_checked, overlaps, quick_fixes, to_lsp_diagnostic
from tapelint.lsp.notebook import PYTHON_LANGUAGES, Cell, by_cell, cell_texts, notebook_json
from tapelint.lsp.worker import LintWorker, Request
from tapelint.notebooks import is_notebook
from tapelint.rules import BY_CODE

DEBOUNCE_SECONDS = 0.3


@dataclass(frozen=True)
class Finding:
    diagnostic: Diagnostic
    lsp: types.Diagnostic


@dataclass(frozen=True)
class Published:
    """What the client was last told about a document, and the text it was about."""

    text: DocumentText
    findings: tuple[Finding, ...]


class TapelintServer(LanguageServer):
    def __init__(self, debounce: float = DEBOUNCE_SECONDS) -> None:
        # Full sync: pygls applies incremental edits by str.splitlines lines,
        # which also break at form feeds and other characters that end no
        # line in LSP, so an edit after such a character would land elsewhere.
        notebooks = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithCells(
                notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
            )],
            save=True,
        )
        super().__init__("tapelint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         notebook_document_sync=notebooks)
        self.debounce = debounce
        # One worker: runs for different files queue rather than compete for the GIL.
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tapelint-lint")
        self.worker = LintWorker()  # used from the lint thread only
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.published: dict[str, Published] = {}
        self.config_errors: set[str] = set()  # each shown once, not on every pause in typing
        self.notebook_cells: dict[str, tuple[str, ...]] = {}  # notebook URI -> cell URIs last published

    def warm(self) -> None:
        """Start the lint process now, so the first document does not wait for its imports."""
        self.linter.submit(self.worker.start)

    def schedule(self, uri: str, delay: float, notebook: bool = False) -> None:
        """Lint `uri` after `delay` seconds, replacing any run not yet published."""
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        run = self._lint_notebook(uri, delay) if notebook else self._lint(uri, delay)
        task = asyncio.get_running_loop().create_task(run)
        self.pending[uri] = task
        task.add_done_callback(lambda done: self._forget(uri, done))

    def forget(self, uri: str) -> None:
        """A closed document: drop its pending run and clear its diagnostics."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.published.pop(uri, None)
        for cleared in self.notebook_cells.pop(uri, (uri,)):
            self.published.pop(cleared, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cleared, diagnostics=[]))

    def _forget(self, uri: str, task: asyncio.Task[None]) -> None:
        if self.pending.get(uri) is task:
            del self.pending[uri]

    async def _lint(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return
        source = document.source
        text = DocumentText(
            uri=uri,
            path=document.path,
            version=document.version,
            lines=tuple(split_lines(source)),  # LSP's (and libcst's) line breaks
            codec=document.position_codec,
        )
        result = await self._result(source, text.path, notebook=False)
        current = self.workspace.text_documents.get(uri)
        if result is None or current is None or current.version != text.version:
            return  # edited meanwhile: the run scheduled by that edit publishes
        self._publish(text, result.diagnostics, unchecked=result.errors)

    async def _lint_notebook(self, uri: str, delay: float) -> None:
        """Lint a notebook's code cells as one program; publish on each cell."""
        if delay:
            await asyncio.sleep(delay)
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return
        version, cells = notebook.version, []
        for cell in notebook.cells:
            document = self.workspace.text_documents.get(cell.document)
            if document is None:
                return  # the workspace is mid-update; the change that follows reschedules
            source = document.source
            text = DocumentText(cell.document, document.path, document.version, tuple(split_lines(source)),
                                document.position_codec)
            code = cell.kind == types.NotebookCellKind.Code and document.language_id in PYTHON_LANGUAGES
            cells.append(Cell(code, source, text))
        result = await self._result(notebook_json(cells), to_fs_path(uri) or uri, notebook=True)
        current = self.workspace.get_notebook_document(notebook_uri=uri)
        if result is None or current is None or current.version != version:
            return
        texts = cell_texts(cells)
        for index, diagnostics in by_cell(result.diagnostics, cells).items():
            self._publish(texts[index], diagnostics, texts)
        cell_uris = tuple(cell.text.uri for cell in cells)
        for removed in set(self.notebook_cells.get(uri, ())) - set(cell_uris):
            self.published.pop(removed, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=removed, diagnostics=[]))
        self.notebook_cells[uri] = cell_uris

    async def _result(self, source: str, path: str, notebook: bool) -> FileResult | None:
        try:
            result, config_error = await asyncio.get_running_loop().run_in_executor(
                self.linter, self._run, source, path, notebook
            )
        except Exception as exc:  # a bug in tapelint must not take the editor's server down
            self._log(types.MessageType.Error, f"internal error on {path}: {type(exc).__name__}: {exc}")
            return None
        if config_error is not None and config_error not in self.config_errors:
            self.config_errors.add(config_error)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"{config_error} (using defaults)")
            )
        for error in result.errors:
            self._log(types.MessageType.Warning, f"{error.path}: {error.message}")
        for warning in result.warnings:
            self._log(types.MessageType.Warning, f"{warning.path}:{warning.position.line}: {warning.message}")
        return result

    def _publish(self, text: DocumentText, diagnostics: Sequence[Diagnostic],
                 cells: Mapping[int, DocumentText] | None = None, unchecked: Sequence[FileError] = ()) -> None:
        """The document's findings, and a line for each reason it was not checked."""
        findings = tuple(Finding(d, to_lsp_diagnostic(d, text, cells)) for d in diagnostics)
        self.published[text.uri] = Published(text, findings)
        shown = [f.lsp for f in findings] + [not_checked(error) for error in unchecked if error.path == text.path]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=text.uri, version=text.version, diagnostics=shown)
        )

    def _run(self, source: str, path: str, notebook: bool) -> tuple[FileResult, str | None]:
        """In the lint thread: configuration lookup reads files, linting is
        CPU (in the lint process). The configuration is looked up afresh each run (a few small
        files), so an edited pyproject applies on the next keystroke. A
        broken one is reported, and the file linted as with `--isolated`; a file
        the configuration excludes gets no diagnostics, as on the command line.
        An `.ipynb` opened as a text document is its JSON, whose positions are
        not the cells': only the notebook document is linted."""
        try:
            resolver = Resolver()
            if resolver.excluder(named=(path,)).excluded_by(path) is not None:
                return FileResult(path), None
            settings, error = resolver.settings_for(path), None
        except ConfigError as exc:
            settings, error = Resolver(isolated=True).settings_for(path), str(exc)
        if is_notebook(path) and not notebook:
            return FileResult(path), error
        return self.worker.lint(Request(source, path, settings, notebook)).result, error

    def _log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def current(self, uri: str) -> Published | None:
        """The published state of an open document, if it still describes its text."""
        document = self.workspace.text_documents.get(uri)
        published = self.published.get(uri)
        if document is None or published is None or published.text.version != document.version:
            return None
        return published


server = TapelintServer()


@server.feature(types.INITIALIZED)
def initialized(ls: TapelintServer, params: types.InitializedParams) -> None:
    ls.warm()


@server.feature(types.SHUTDOWN)
def shutdown(ls: TapelintServer, params: None) -> None:
    ls.linter.submit(ls.worker.close)  # after the lint in progress, if any


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TapelintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TapelintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, ls.debounce)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TapelintServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TapelintServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.forget(params.text_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def did_open_notebook(ls: TapelintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, 0, notebook=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def did_change_notebook(ls: TapelintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, ls.debounce, notebook=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def did_save_notebook(ls: TapelintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.schedule(params.notebook_document.uri, 0, notebook=True)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def did_close_notebook(ls: TapelintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    ls.forget(params.notebook_document.uri)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def code_action(ls: TapelintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    if only is not None and types.CodeActionKind.QuickFix not in only:
        return []
    published = ls.current(params.text_document.uri)
    if published is None:
        return []  # not linted at this version yet: edits could land in the wrong place
    edit_capabilities = ls.client_capabilities.workspace and ls.client_capabilities.workspace.workspace_edit
    versioned = bool(edit_capabilities and edit_capabilities.document_changes)
    return [
        action
        for finding in published.findings
        if overlaps(finding.lsp.range, params.range)
        for action in quick_fixes(finding.diagnostic, finding.lsp, published.text, versioned)
    ]


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: TapelintServer, params: types.HoverParams) -> types.Hover | None:
    published = ls.current(params.text_document.uri)
    if published is None:
        return None
    here = [f for f in published.findings if contains(f.lsp.range, params.position)]
    if not here:
        return None
    messages = [f"**{f.diagnostic.code}** {f.diagnostic.message}" for f in here]
    codes = dict.fromkeys(f.diagnostic.code for f in here)
    sections = ["\n\n".join(messages), *(BY_CODE[code].documentation() for code in codes)]
    return types.Hover(
        # A blank line before `---`: right under text, CommonMark reads it as a heading underline.
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(sections)),
        range=here[0].lsp.range,
    )


def main() -> int:
    server.start_io()
    return 0
