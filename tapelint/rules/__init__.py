"""The rule registry: one module per rule, listed here in code order."""

from __future__ import annotations

from tapelint.rules.base import Rule
from tapelint.rules.tl001_hoisted_tracked_tensor import HoistedTrackedTensor
from tapelint.rules.tl002_shared_ancestor_backward import SharedAncestorBackward
from tapelint.rules.tl003_tracked_accumulation import TrackedAccumulation
from tapelint.rules.tl004_repeated_backward import RepeatedBackward
from tapelint.rules.tl005_carried_tracked_state import CarriedTrackedState
from tapelint.rules.tl006_retain_graph_to_combine import RetainGraphToCombine
from tapelint.rules.tl007_stale_graph import StaleGraph
from tapelint.rules.tl900_parse_error import ParseError
from tapelint.rules.tl901_unused_suppression import UnusedSuppression

ALL_RULES: tuple[type[Rule], ...] = (
    HoistedTrackedTensor,
    SharedAncestorBackward,
    TrackedAccumulation,
    RepeatedBackward,
    CarriedTrackedState,
    RetainGraphToCombine,
    StaleGraph,
    ParseError,
    UnusedSuppression,
)

BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}


def resolve(code_or_name: str) -> type[Rule] | None:
    """A rule by its code (`TL001`, case-insensitive) or its kebab-case name."""
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
