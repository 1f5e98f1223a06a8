"""The rules' codes and names, without the rules.

Configuration and selectors need only these, and a run whose every result
comes from the cache must not pay for importing the rules (which import
libcst and the analysis). Each rule lives in the module `<code>_<name>`
(`tl003_tracked_accumulation`): that module name is the one place its code
and name are spelled, and the registry (`tapelint.rules`) loads each rule
from it and checks that the class agrees.
"""

from __future__ import annotations

from dataclasses import dataclass

# In code order: the order of `tapelint rules` and of the registry.
MODULES: tuple[str, ...] = (
    "tl001_hoisted_tracked_tensor",
    "tl002_shared_ancestor_backward",
    "tl003_tracked_accumulation",
    "tl004_repeated_backward",
    "tl005_carried_tracked_state",
    "tl006_retain_graph_to_combine",
    "tl007_stale_graph",
    "tl900_parse_error",
    "tl901_unused_suppression",
)


@dataclass(frozen=True)
class RuleId:
    code: str  # `TL003`
    name: str  # `tracked-accumulation`
    module: str  # `tl003_tracked_accumulation`


def _rule_id(module: str) -> RuleId:
    code, _, name = module.partition("_")
    return RuleId(code.upper(), name.replace("_", "-"), module)


RULE_IDS: tuple[RuleId, ...] = tuple(_rule_id(module) for module in MODULES)
CODES: tuple[str, ...] = tuple(rule.code for rule in RULE_IDS)
_BY_CODE = {rule.code: rule for rule in RULE_IDS}
_BY_NAME = {rule.name: rule for rule in RULE_IDS}


def resolve_code(code_or_name: str) -> str | None:
    """The code of a rule named by its code (`TL001`, case-insensitive) or
    its kebab-case name; None if no rule has it."""
    rule = _BY_CODE.get(code_or_name.upper()) or _BY_NAME.get(code_or_name.lower())
    return rule.code if rule is not None else None
