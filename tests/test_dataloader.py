"""Batches that come through a `DataLoader` with a `collate_fn`, dataclass
records, iterator classes and `**mapping` arguments: what a training loop
reads from a rollout store is what was stored in it. Each case both ways:
stored with grad (reused across epochs: TL001 at the stored value) and
stored detached (silent)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.findings import HazardKind
from tapelint.settings import Settings

# A rollout store read through DataLoader(self, collate_fn=partial(...)) into dataclass batches.
STORE = """
    import torch
    import torch.nn as nn
    from dataclasses import dataclass
    from functools import partial
    from torch.utils.data import DataLoader, Dataset

    @dataclass
    class Sample:
        obs: torch.Tensor
        old_logp: torch.Tensor

    @dataclass
    class Batch:
        obs: torch.Tensor
        old_logp: torch.Tensor

    def collate(scale, samples):
        return Batch(torch.stack([s.obs for s in samples]), torch.stack([s.old_logp for s in samples]) * scale)

    class Rollouts(Dataset):
        def __init__(self):
            self.kept = []

        def add(self, samples):
            self.kept += samples

        def __getitem__(self, i):
            return self.kept[i]

        def __len__(self):
            return len(self.kept)

        def loader(self):
            return DataLoader(self, 2, shuffle=True, collate_fn=partial(collate, 1.0))

    policy = nn.Linear(4, 3)
    opt = torch.optim.SGD(policy.parameters(), lr=0.01)
    rollouts = Rollouts()
    collected = []
    for t in range(4):
        obs = torch.randn(4)
        logp = {logp}
        collected.append(Sample(obs, logp))
    rollouts.add(collected)
    for epoch in range(2):
        for batch in rollouts.loader():
            ratio = (policy(batch.obs).log_softmax(-1) - batch.old_logp).exp()
            loss = -ratio.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""

WITH_GRAD = "policy(obs).log_softmax(-1)"
DETACHED = "policy(obs).log_softmax(-1).detach()"


def hazards(code: str) -> list:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis.results()


def hoisted_names(code: str) -> list[str]:
    return [h.value for h in hazards(code) if h.kind is HazardKind.HOISTED]


def test_collated_batches_read_what_the_dataset_stored() -> None:
    assert hoisted_names(STORE.format(logp=WITH_GRAD)) == ["logp"]


def test_detached_rollouts_through_the_loader_are_silent() -> None:
    assert hazards(STORE.format(logp=DETACHED)) == []


def test_each_collated_batch_is_its_own_tensor() -> None:
    # The stacked batch is made per batch: only the stored value is reused, not `torch.stack(...)`.
    assert all("stack" not in name for name in hoisted_names(STORE.format(logp=WITH_GRAD)))


LOADER_WITHOUT_COLLATE = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    net = nn.Linear(3, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    features = [{feature} for i in range(4)]
    for epoch in range(3):
        for x in DataLoader(features, batch_size=2):
            loss = net(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_default_collate_keeps_each_sample_history() -> None:
    assert hoisted_names(LOADER_WITHOUT_COLLATE.format(feature="net(torch.randn(3))")) != []
    assert hazards(LOADER_WITHOUT_COLLATE.format(feature="torch.randn(3)")) == []


ITERATOR = """
    import torch
    import torch.nn as nn

    class Chunks:
        def __init__(self, rows, size):
            self.rows = rows
            self.size = size

        def __iter__(self):
            return self

        def __next__(self):
            return self.rows[: self.size]

    net = nn.Linear(3, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    rows = {rows}
    for epoch in range(3):
        for chunk in Chunks(rows, 2):
            loss = net(chunk).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
"""


def test_an_iterator_class_produces_what_next_returns() -> None:
    assert hoisted_names(ITERATOR.format(rows="net(torch.randn(4, 3))")) == ["rows"]
    assert hazards(ITERATOR.format(rows="torch.randn(4, 3)")) == []


RECORD_COPY = """
    import torch
    import torch.nn as nn
    from dataclasses import dataclass

    @dataclass
    class Record:
        x: torch.Tensor
        y: torch.Tensor

    net = nn.Linear(3, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    kept = Record({x}, torch.randn(3))
    for step in range(3):
        fields = {{}}
        for key, value in kept.__dict__.items():
            fields[key] = value[:2]
        part = kept.__class__(**fields)
        loss = net(part.x).sum() + part.y.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_record_rebuilt_from_its_dict_holds_its_fields() -> None:
    assert hoisted_names(RECORD_COPY.format(x="net(torch.randn(3))")) != []
    assert hazards(RECORD_COPY.format(x="torch.randn(3)")) == []


@pytest.mark.parametrize("call", ["Record(x=h, y=z)", "Record(h, z)", "Record(**{'x': h, 'y': z})"])
def test_dataclass_fields_bind_by_position_keyword_or_mapping(call: str) -> None:
    code = f"""
        import torch
        import torch.nn as nn
        from dataclasses import dataclass

        @dataclass
        class Record:
            x: torch.Tensor
            y: torch.Tensor

        net = nn.Linear(3, 3)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        h = net(torch.randn(3))
        z = torch.randn(3)
        r = {call}
        for step in range(3):
            loss = (net(r.y) * r.x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """
    assert "h" in hoisted_names(code)


def test_a_plain_class_without_init_stores_nothing_from_its_arguments() -> None:
    # Not a dataclass: `Record(h)` calls object's constructor, which keeps nothing.
    code = """
        import torch
        import torch.nn as nn

        class Record:
            x: torch.Tensor

        net = nn.Linear(3, 3)
        h = net(torch.randn(3))
        r = Record()
        for step in range(3):
            loss = net(torch.randn(3)).sum()
            loss.backward()
    """
    assert hazards(code) == []
