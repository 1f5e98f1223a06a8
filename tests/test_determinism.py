"""The analysis meets hazards in the order of sets of abstract values, which
is the order of object identities: the report must not depend on it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from tapelint.analysis.driver import analyze_module, in_source_order
from tapelint.settings import Settings

# One loss from either of two lambdas, backwarded twice: two equivalent hazards
# whose definitions are the two lambdas' bodies.
LAMBDAS = Path(__file__).parent.parent / "fixtures" / "tl004_lambdas_in_a_list.py"


def test_hazards_come_out_in_source_order_whatever_order_they_were_met():
    module = cst.parse_module(LAMBDAS.read_text())
    found = analyze_module(module, Settings(), path=str(LAMBDAS))
    assert len({id(item.hazard.definition) for item in found}) >= 2
    assert in_source_order(list(reversed(found)), module) == in_source_order(found, module) == found


def test_the_first_lambda_is_the_definition_reported():
    module = cst.parse_module(LAMBDAS.read_text())
    found = analyze_module(module, Settings(), path=str(LAMBDAS))
    first = module.code_for_node(found[0].hazard.definition)
    assert first == "(x * 2).sum()"
