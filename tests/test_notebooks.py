"""Notebooks: code cells as one program, positions in cell coordinates, magics
neutralised, malformed notebooks reported in one line."""

from __future__ import annotations

import json
from pathlib import Path

from tapelint.cli import main
from tapelint.diagnostics import Position
from tapelint.notebooks import lint_notebook, load, program, replace_cells
from tapelint.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# TL001: `base` defined at line 10 (columns 7-20), loop at 13, backward at 15
LINES = (FIXTURES / "tl001_alias_of_hoisted.py").read_text().splitlines(keepends=True)


def code(source: list[str], outputs: list | None = None) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": outputs or [], "source": source}


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def notebook(*cells: dict, language: str = "python") -> str:
    document = {"cells": list(cells), "metadata": {"language_info": {"name": language}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1) + "\n"


# cell 1 markdown; cell 2 fixture lines 1-8 plus two magics; cell 3 lines 9-11
# (`base` on its line 2); cell 4 markdown; cell 5 the loop (backward on its line 4)
OUTPUT = {"output_type": "stream", "name": "stdout", "text": ["0 tensor([1.])\n"]}
CELLS = (
    markdown("# Training\n"),
    code(LINES[:8] + ["%matplotlib inline\n", "!pip install torch\n"]),
    code(LINES[8:11]),
    markdown("The loop:"),
    code(LINES[11:], outputs=[OUTPUT]),
)


def test_positions_are_cell_and_line_within_the_cell():
    result = lint_notebook(notebook(*CELLS), "nb.ipynb", Settings())
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "TL001"
    assert diagnostic.range.start == Position(2, 7, cell=3) and diagnostic.range.end == Position(2, 20, cell=3)
    related = {r.role.value: r.range.start for r in diagnostic.related}
    assert related["fails-at"] == Position(4, 4, cell=5)
    assert "at line 2 of cell 3, outside the loop at line 2 of cell 5" in diagnostic.message
    (edit,) = diagnostic.fixes[0].edits
    assert edit.range.start.cell == 3
    assert diagnostic.to_json()["range"]["start"] == {"cell": 3, "line": 2, "column": 7}


def test_program_mapping_round_trips():
    nb = program(load(notebook(*CELLS)))
    assert [(s.cell, s.first_line, s.line_count) for s in nb.cells] == [(2, 1, 10), (3, 11, 3), (5, 14, 5)]
    for line in range(1, 19):
        assert nb.to_program(nb.to_cell(Position(line, 3))) == Position(line, 3)
    # magics became `pass`, every other line kept its place
    lines = nb.source.splitlines()
    assert lines[8:10] == ["pass", "pass"] and lines[11] == LINES[9].rstrip("\n")


def test_magics_and_shell_lines_are_neutralised():
    cells = [
        code(["%%bash\n", "echo (((\n"]),
        code(["%%time\n", "import torch\n"]),
        code(["x = !ls\n", "torch.nn?\n", "for i in range(2):\n", "    %time print(i)\n", "!echo a \\\n", "  b\n"]),
    ]
    nb = program(load(notebook(*cells)))
    assert nb.source.splitlines() == ["", "", "", "import torch", "pass", "pass", "for i in range(2):",
                                      "    pass", "pass", ""]
    assert lint_notebook(notebook(*cells), "nb.ipynb", Settings()).diagnostics == ()


def test_string_sources_and_syntax_errors_point_into_the_cell():
    text = notebook(code("import torch\n"), markdown("x"), code("y = 1\ndef (:\n"))
    (diagnostic,) = lint_notebook(text, "nb.ipynb", Settings(select=frozenset({"TL900"}))).diagnostics
    assert diagnostic.code == "TL900" and (diagnostic.range.start.cell, diagnostic.range.start.line) == (3, 2)


def test_suppressions_work_in_cells():
    cells = list(CELLS)
    cells[2] = code(LINES[8:9] + [LINES[9].rstrip("\n") + "  # noqa: TL001\n"] + LINES[10:11])
    assert lint_notebook(notebook(*cells), "nb.ipynb", Settings()).diagnostics == ()


def test_malformed_notebooks_are_one_line_errors():
    for text, message in [
        ("{not json", "not a valid notebook: invalid JSON at 1:2"),
        ('{"cells": 3}', "not a valid notebook: no `cells` list"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "not a valid notebook: cell 1 has no text `source`"),
    ]:
        result = lint_notebook(text, "nb.ipynb", Settings())
        (error,) = result.errors
        assert error.message.startswith(message) and "\n" not in error.message


def test_other_languages_are_not_checked():
    assert lint_notebook(notebook(*CELLS, language="R"), "nb.ipynb", Settings()).diagnostics == ()


def test_replace_cells_keeps_outputs_and_everything_else():
    text = notebook(*CELLS)
    fixed = replace_cells(text, {3: "".join(LINES[8:9]) + "base = torch.tanh(x).detach()\n" + LINES[10]})
    before, after = json.loads(text), json.loads(fixed)
    assert after["cells"][4] == before["cells"][4] and after["cells"][4]["outputs"] == [OUTPUT]
    assert after["metadata"] == before["metadata"]
    assert after["cells"][2]["source"][1] == "base = torch.tanh(x).detach()\n"
    assert replace_cells(text, {}) == text  # nothing replaced: byte for byte


def test_discovered_and_reported_by_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(notebook(*CELLS))
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(notebook(*CELLS))
    (tmp_path / "broken.ipynb").write_text("{")
    assert main(["check", "--format", "json", "-j", "1"]) == 1
    document = json.loads(capsys.readouterr()[0])
    assert [(d["path"], d["range"]["start"]) for d in document["diagnostics"]] == [
        ("nb.ipynb", {"cell": 3, "line": 2, "column": 7})
    ]
    assert [e["path"] for e in document["errors"]] == ["broken.ipynb"]
    # text output never shows a line of the notebook's JSON as if it were the source
    main(["check", "-j", "1", "nb.ipynb"])
    assert '"source"' not in capsys.readouterr()[0]


def _training_notebook(path):
    """A notebook whose third cell accumulates the loss tensor (TL003)."""
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# training\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["kept\n"]}],
         "source": ["import torch\n", "import torch.nn as nn\n", "import torch.nn.functional as F\n",
                    "model = nn.Linear(3, 1)\n", "total_loss = 0.0"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "outputs": [],
         "source": ["%matplotlib inline\n", "for step in range(4):\n",
                    "    loss = F.mse_loss(model(torch.randn(8, 3)), torch.randn(8, 1))\n",
                    "    loss.backward()\n", "    total_loss += loss\n", "print(total_loss / 4)"]},
    ]
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return notebook


def test_text_output_names_the_cell(tmp_path, capsys):
    from tapelint.cli import main

    path = tmp_path / "train.ipynb"
    _training_notebook(path)
    assert main(["check", str(path), "--no-color", "--jobs", "1"]) == 1
    assert f"{path}:cell 3:5:5: TL003" in capsys.readouterr().out


def test_fix_writes_back_valid_notebook_json_with_outputs_untouched(tmp_path, capsys):
    from tapelint.cli import main

    path = tmp_path / "train.ipynb"
    before = _training_notebook(path)
    assert main(["check", str(path), "--fix", "--jobs", "1"]) == 0
    after = json.loads(path.read_text(encoding="utf-8"))
    assert "".join(after["cells"][2]["source"]).count("total_loss += loss.item()") == 1
    assert after["cells"][1]["outputs"] == before["cells"][1]["outputs"]
    assert [c["cell_type"] for c in after["cells"]] == [c["cell_type"] for c in before["cells"]]
    assert after["cells"][2]["source"][0] == "%matplotlib inline\n"
