"""Every rule's valid/invalid examples, which live next to the rule and feed
its documentation, run as tests (Fixit's convention)."""

from __future__ import annotations

import pytest

from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.rules import ALL_RULES
from tapelint.settings import Settings

INVALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.invalid)]
VALID = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.valid)]


@pytest.mark.parametrize("rule,index,example", INVALID, ids=[f"{r.code}-invalid-{i}" for r, i, _ in INVALID])
def test_invalid_example_is_reported(rule, index, example):
    result = lint_source(example.code, "example.py", Settings(semantics=Semantics(example.semantics)))
    lines = [d.range.start.line for d in result.diagnostics if d.code == rule.code]
    assert lines == [example.line], [d.message for d in result.diagnostics]


@pytest.mark.parametrize("rule,index,example", VALID, ids=[f"{r.code}-valid-{i}" for r, i, _ in VALID])
def test_valid_example_is_clean(rule, index, example):
    result = lint_source(example.code, "example.py", Settings(semantics=Semantics(example.semantics)))
    assert [d for d in result.diagnostics if d.code == rule.code] == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_documentation_has_every_section(rule):
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad"):
        assert heading in doc
    if rule.invalid:
        assert "## Example" in doc and "## Use instead" in doc
