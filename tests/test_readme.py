"""The README stays true: its rule table is the registry's, and its test
command is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from tapelint.rules import ALL_RULES

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_is_the_registry():
    rows = re.findall(r"^\| (TL\d{3}) \| ([a-z-]+) \| (.+?) \|$", README, re.MULTILINE)
    assert rows == [(rule.code, rule.name, rule.summary) for rule in ALL_RULES]


def test_ci_runs_the_readme_test_command():
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", quick_start)
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()
