"""The analysis meets hazards in the order of sets of abstract values, which
is the order of object identities: the report must not depend on it."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from tapelint.analysis.driver import ModuleAnalysis, analyze_module, in_source_order
from tapelint.analysis.hazards import Reuse
from tapelint.analysis.model import AbstractNode
from tapelint.analysis.state import State
from tapelint.ops import Saves
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


# A value made once before the loop by an op that saves nothing: walked again,
# only a strict tape rejects it.
HOISTED_ADD = """
import torch
w = torch.randn(3, requires_grad=True)
feats = w + 1
for step in range(3):
    (feats * 2).sum().backward()
"""


def test_a_walk_met_again_with_more_saved_ground_behind_it_takes_the_stronger_verdict():
    """trlx's PPO trainer (rollouts kept with their graphs): a loop pass meets
    the same reuse again once more of the released ground behind it is
    known. The verdict is the strongest any pass found, not the first pass's
    (which pass came first followed the order of sets, so the findings
    changed with PYTHONHASHSEED)."""
    analysis = ModuleAnalysis(cst.parse_module(HOISTED_ADD), Settings())
    analysis.run()
    (key, hazard), = analysis.log.hazards.items()
    assert not hazard.fails_under_torch  # `w + 1` saves nothing
    node = analysis.log.reused_nodes[key]
    saving = AbstractNode(node.site, node.loops, node.tracked, False, Saves.TENSORS, "mul", [])
    first = hazard.first_backward
    again = Reuse((node, None), ((node, None), (saving, None)), first)
    analysis.log._record_reuse(hazard.fails_at, first.roots, again, State({}, {}, {}))
    assert analysis.log.hazards[key].fails_under_torch
    assert len(analysis.log.hazards) == 1
