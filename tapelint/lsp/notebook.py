"""Notebook documents (LSP 3.17 `notebookDocument/*`) as tapelint sees them.

An editor sends a notebook as cells, each cell a text document of its own.
tapelint lints the code cells in order as one program, exactly as it lints
an `.ipynb` file (`tapelint.notebooks`: the same magics neutralised, the
same cell coordinates), then publishes each cell's findings on that cell's
URI, with positions inside the cell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tapelint.diagnostics import Diagnostic
from tapelint.lsp.convert import DocumentText

PYTHON_LANGUAGES = frozenset({"python", "python3", "ipython"})


@dataclass(frozen=True)
class Cell:
    """One cell of an open notebook, with the snapshot of its text."""

    code: bool  # a Python code cell (markdown and other languages are not linted)
    source: str
    text: DocumentText


def notebook_json(cells: Sequence[Cell]) -> str:
    """The cells as `.ipynb` JSON, the one form `lint_notebook` reads: cell
    indices (1-based, every cell counted) stay those of the editor's notebook."""
    document = {
        "cells": [{"cell_type": "code" if cell.code else "markdown", "source": cell.source} for cell in cells],
        "metadata": {},
    }
    return json.dumps(document)


def by_cell(diagnostics: Sequence[Diagnostic], cells: Sequence[Cell]) -> dict[int, list[Diagnostic]]:
    """Each cell's diagnostics (by 1-based index). A fix is kept only if all
    its edits are in the diagnostic's own cell: a workspace edit is offered
    on one cell document."""
    grouped: dict[int, list[Diagnostic]] = {index: [] for index in range(1, len(cells) + 1)}
    for diagnostic in diagnostics:
        cell = diagnostic.range.start.cell
        if cell is None or cell not in grouped:
            continue
        fixes = tuple(f for f in diagnostic.fixes if all(e.range.start.cell == cell for e in f.edits))
        grouped[cell].append(replace(diagnostic, fixes=fixes))
    return grouped


def cell_texts(cells: Sequence[Cell]) -> Mapping[int, DocumentText]:
    return {index: cell.text for index, cell in enumerate(cells, 1)}
