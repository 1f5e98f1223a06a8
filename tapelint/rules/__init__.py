"""The rule registry: one module per rule, named and ordered in `rules.codes`.

The rules are loaded on first use of `ALL_RULES`, `BY_CODE` or `resolve`,
not by importing this package: a run whose every result comes from the
cache, and `rules.codes` or `rules.across_files` alone, import no rule
(each imports libcst and the analysis).
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

from tapelint.rules.codes import RULE_IDS, RuleId, resolve_code

if TYPE_CHECKING:
    from tapelint.rules.base import Rule

ALL_RULES: tuple[type[Rule], ...]
BY_CODE: dict[str, type[Rule]]


def __getattr__(name: str) -> Any:
    if name == "ALL_RULES":
        return _all_rules()
    if name == "BY_CODE":
        return _by_code()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _all_rules() -> tuple[type[Rule], ...]:
    return tuple(_load(rule_id) for rule_id in RULE_IDS)


@cache
def _by_code() -> dict[str, type[Rule]]:
    return {rule.code: rule for rule in _all_rules()}


def _load(rule_id: RuleId) -> type[Rule]:
    """The one rule its module defines, with the code and name the module's name gives."""
    from tapelint.rules.base import Rule

    module = importlib.import_module(f"{__name__}.{rule_id.module}")
    defined = [value for value in vars(module).values()
               if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__]
    if len(defined) != 1 or (defined[0].code, defined[0].name) != (rule_id.code, rule_id.name):
        raise ImportError(f"{module.__name__} must define one rule, {rule_id.code} {rule_id.name}")
    return defined[0]


def resolve(code_or_name: str) -> type[Rule] | None:
    """A rule by its code (`TL001`, case-insensitive) or its kebab-case name."""
    code = resolve_code(code_or_name)
    return _by_code()[code] if code is not None else None
