"""Issue 10, notebooks: malformed documents are one error, never an
internal one; a `%` line that continues Python is not a magic."""

from __future__ import annotations

import json

import pytest

from tapelint.notebooks import lint_notebook
from tapelint.settings import Settings


def notebook(*sources: object, metadata: object = None) -> str:
    cells = [{"cell_type": "code", "source": source, "metadata": {}, "outputs": []} for source in sources]
    return json.dumps({"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("source", [["x = 1\n", 3], [None], {"a": 1}, 7])
def test_non_string_source_is_one_error(source: object) -> None:
    result = lint_notebook(notebook("y = 2\n", source), "nb.ipynb", Settings())
    assert [e.message for e in result.errors] == ["not a valid notebook: cell 2 has no text `source`"]


def test_metadata_nested_100000_deep_is_one_error() -> None:
    text = notebook("x = 1\n")
    text = text[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    result = lint_notebook(text, "nb.ipynb", Settings())
    assert [e.message for e in result.errors] == ["not a valid notebook: JSON nested too deeply to read"]


@pytest.mark.parametrize("metadata", [{"language_info": ["python"]}, {"kernelspec": "python3"}])
def test_odd_language_metadata_is_not_a_crash(metadata: object) -> None:
    result = lint_notebook(notebook("x = 1\n", metadata=metadata), "nb.ipynb", Settings())
    assert result.errors == () and result.diagnostics == ()


HAZARD = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"


@pytest.mark.parametrize(
    "formatting",
    [
        'print("%d of %s"\n      % (3, "x"))\n',
        'rows = [\n    "%d"\n    % 3,\n]\n',
        'msg = "%d of %s" \\\n% (3, "x")\n',
        'doc = """\n%not a magic\n"""\n',
    ],
    ids=["open-parenthesis", "list", "backslash", "triple-quoted"],
)
def test_percent_continuing_python_is_not_a_magic(formatting: str) -> None:
    result = lint_notebook(notebook(formatting, HAZARD), "nb.ipynb", Settings())
    assert result.errors == ()
    assert [(d.code, d.range.start.cell, d.range.start.line) for d in result.diagnostics] == [("TL004", 2, 5)]


def test_real_magics_still_neutralised() -> None:
    result = lint_notebook(notebook("%matplotlib inline\nx = (1,\n     2)\n%time f()\n!ls\n", HAZARD), "nb.ipynb", Settings())
    assert [(d.code, d.range.start.cell) for d in result.diagnostics] == [("TL004", 2)]
