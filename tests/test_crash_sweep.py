"""A small crash sweep (issue 10): generated training-like programs and
notebooks, fixed seed, never an internal error. `benchmarks/crash_sweep.py`
runs the same generator at scale and over installed packages."""

from __future__ import annotations

import traceback

from program_generator import ProgramGenerator

from tapelint.diagnostics import FileResult, Semantics
from tapelint.document import lint_document
from tapelint.runner import Outcome, _with_deep_stack
from tapelint.settings import Settings

COUNT = 100


def lint_or_crash(text: str, path: str, settings: Settings) -> FileResult | traceback.StackSummary:
    box: list[FileResult | traceback.StackSummary] = []

    def lint(path: str, settings: Settings) -> Outcome:
        try:
            box.append(lint_document(text, path, settings))
        except Exception as exc:  # the sweep's finding
            box.append(traceback.extract_tb(exc.__traceback__))
        return Outcome(FileResult(path))

    _with_deep_stack(lint, path, settings)  # the runner's deep stack, as `check` lints
    return box[0]


def test_generated_programs_never_crash_the_linter() -> None:
    generator = ProgramGenerator(seed=20261201)
    crashes = []
    for index in range(COUNT):
        notebook = index % 10 == 9
        text = generator.notebook() if notebook else generator.program()
        settings = Settings(semantics=(Semantics.TORCH, Semantics.STRICT)[index % 2])
        found = lint_or_crash(text, f"g{index}.ipynb" if notebook else f"g{index}.py", settings)
        if isinstance(found, FileResult):
            assert not any(e.message.startswith("internal error") for e in found.errors), (index, found.errors)
        else:
            crashes.append((index, "".join(found.format()[-3:]), text))
    assert crashes == []


def test_the_generator_reaches_the_rules() -> None:
    # A sweep that never finds anything exercises nothing.
    generator = ProgramGenerator(seed=7)
    codes = set()
    for _ in range(60):
        result = lint_or_crash(generator.program(), "g.py", Settings())
        if isinstance(result, FileResult):
            codes.update(d.code for d in result.diagnostics)
    assert {"TL004", "TL900"} <= codes and len(codes) >= 4, codes
