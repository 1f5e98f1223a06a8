"""Lint a file's text as stored on disk: a module or a notebook, with its
inline suppressions honoured. The runner (and any front end that reads
files) calls this rather than `lint_source`, which sees Python text only."""

from __future__ import annotations

from tapelint.diagnostics import FileResult
from tapelint.notebooks import is_notebook, lint_notebook
from tapelint.settings import Settings
from tapelint.suppressions import lint_module


def lint_document(text: str, path: str, settings: Settings) -> FileResult:
    if is_notebook(path):
        return lint_notebook(text, path, settings)
    return lint_module(text, path, settings)
