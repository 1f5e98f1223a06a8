"""Results of calls the analysis cannot see into (a network built from a
config): a dict's entries are separate tensors (`store.element`), so two
losses on two entries are not a shared graph; one entry walked twice is."""

from __future__ import annotations

import textwrap

import libcst as cst

from tapelint.analysis.driver import ModuleAnalysis
from tapelint.settings import Settings

AGENT = """
    import torch

    class Agent:
        def __init__(self, config):
            self.network = config.network_fn()
            self.opt = torch.optim.Adam(self.network.parameters(), lr=1e-3)

        def step(self, batches):
            for state, adv, ret in batches:
                prediction = self.network(state)
                policy_loss = -(prediction[{policy!r}] * adv).mean()
                value_loss = (ret - prediction["v"]).pow(2).mean()
                self.opt.zero_grad()
                policy_loss.backward()
                value_loss.backward()
                self.opt.step()
"""


def findings(code: str) -> list:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis.results()


def test_two_entries_of_an_unseen_networks_output_are_two_tensors():
    """DeepRL's PPO with separate actor and critic bodies: the policy loss
    on `prediction['log_pi_a']`, the value loss on `prediction['v']`."""
    assert findings(AGENT.format(policy="log_pi_a")) == []


def test_one_entry_walked_by_two_backwards_is_shared():
    found = findings(AGENT.format(policy="v"))
    assert [type(h).__name__ for h in found] == ["SharedHazard"]
