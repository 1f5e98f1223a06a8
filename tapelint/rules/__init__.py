"""The rule registry: one module per rule, listed here in code order."""

from __future__ import annotations

from tapelint.rules.base import Rule
from tapelint.rules.tl900_parse_error import ParseError

ALL_RULES: tuple[type[Rule], ...] = (ParseError,)

BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}


def resolve(code_or_name: str) -> type[Rule] | None:
    """A rule by its code (`TL001`, case-insensitive) or its kebab-case name."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
