"""Attributes by name (`analysis/interp/attributes.py`): `getattr`/`setattr`
with a literal or a computed name, named-tuple records, and `map` running the
function it is given: checked on what the rules report for small programs,
each both ways (the hazard, and the same program made correct)."""

from __future__ import annotations

import textwrap

from tapelint.lint import lint_source
from tapelint.settings import Settings


def codes(code: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(code), "t.py", Settings(), precheck=False)
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


STORE = """
    import torch

    class Store:
        def __init__(self):
            {reset}

        def put(self, value):
            {put}

        def stacked(self):
            return torch.cat({read}, dim=0)

    net = torch.nn.Linear(3, 1)
    store = Store()
    for step in range(3):
        store.put({value})
    old = store.stacked()
    for epoch in range(2):
        loss = (net(torch.randn(3, 3)) - old).pow(2).mean()
        loss.backward()
    """


def store(reset: str, put: str, read: str, value: str = "net(torch.randn(1, 3))") -> list[tuple[str, int]]:
    """The findings, each line given as 0 when it is the line of `old = store.stacked()`."""
    source = textwrap.dedent(STORE.format(reset=reset, put=put, read=read, value=value))
    stacked = source.splitlines().index("old = store.stacked()") + 1
    return [(code, 0 if line == stacked else line) for code, line in codes(source)]


def test_getattr_and_setattr_with_a_literal_name_are_the_attribute():
    assert store("setattr(self, 'kept', [])", "getattr(self, 'kept').append(value)",
                 "getattr(self, 'kept')") == [("TL001", 0)]
    assert store("setattr(self, 'kept', [])", "getattr(self, 'kept').append(value)", "getattr(self, 'kept')",
                 value="net(torch.randn(1, 3)).detach()") == []


def test_a_computed_name_reads_any_data_attribute_the_object_holds():
    """`setattr(self, key, [])` over the keys, `getattr(self, k).append(v)`:
    the lists are the object's, whichever key names them."""
    reset = "for key in ['a', 'b']:\n                setattr(self, key, [])"
    put = "for key in ['a', 'b']:\n                getattr(self, key).append(value)"
    assert store(reset, put, "getattr(self, 'a')") == [("TL001", 0)]
    assert store(reset, put, "self.b") == [("TL001", 0)]
    assert store(reset, put, "self.b", value="net(torch.randn(1, 3)).detach()") == []


def test_a_computed_getattr_does_not_call_the_objects_modules():
    """A computed read is any *data* attribute: a module kept on the object is
    not called through it (its result stays unknown, never reported)."""
    source = """
        import torch

        class Agent:
            def __init__(self):
                self.net = torch.nn.Linear(3, 1)
                self.features = self.net(torch.randn(2, 3))

            def run(self, name):
                return getattr(self, name)

        agent = Agent()
        for step in range(2):
            agent.run("net_" + str(step))(torch.randn(2, 3)).sum().backward()
        """
    assert codes(source) == []


RECORD = """
    import torch
    from collections import namedtuple

    Entry = namedtuple("Entry", {fields})
    net = torch.nn.Linear(3, 1)
    features = net(torch.randn(4, 3))
    targets = torch.randn(4, 1)
    entry = Entry({build})
    for epoch in range(2):
        loss = (net(torch.randn(4, 3)) - entry.{read}).pow(2).mean()
        loss.backward()
    """


def record(fields: str, build: str, read: str) -> list[tuple[str, int]]:
    return codes(RECORD.format(fields=fields, build=build, read=read))


def test_a_named_tuple_keeps_its_fields_apart():
    assert record("['x', 'y']", "features, targets", "x") == [("TL001", 7)]
    assert record("['x', 'y']", "features, targets", "y") == []
    assert record("'x y'", "y=targets, x=features", "x") == [("TL001", 7)]
    assert record("'x, y'", "y=targets, x=features", "y") == []


def test_a_named_tuple_of_unknown_fields_or_starred_values_may_hold_any():
    assert record("names", "features, targets", "y").count(("TL001", 7)) == 1
    assert record("['x', 'y']", "*[features, targets]", "y") == [("TL001", 7)]


def test_a_records_class_rebuilds_it_from_detached_values():
    source = """
        import torch
        from collections import namedtuple

        net = torch.nn.Linear(3, 1)
        Entry = namedtuple("Entry", ["x", "y"])
        entries = Entry(net(torch.randn(4, 3)), torch.randn(4, 1))
        Cls = entries.__class__
        entries = Cls(*list(map({detach}, entries)))
        for epoch in range(2):
            loss = (net(torch.randn(4, 3)) - entries.x).pow(2).mean()
            loss.backward()
        """
    assert codes(source.format(detach="lambda t: t.detach()")) == []
    assert codes(source.format(detach="lambda t: t")) == [("TL001", 7)]


def test_a_typing_named_tuple_class_holds_its_fields():
    source = """
        import torch
        from typing import NamedTuple

        class Batch(NamedTuple):
            x: torch.Tensor
            y: torch.Tensor

        net = torch.nn.Linear(3, 1)
        batch = Batch({x}, torch.randn(4, 1))
        for epoch in range(2):
            loss = (net(torch.randn(4, 3)) - batch.x).pow(2).mean()
            loss.backward()
        """
    assert codes(source.format(x="net(torch.randn(4, 3))")) == [("TL001", 10)]
    assert codes(source.format(x="net(torch.randn(4, 3)).detach()")) == []


def test_map_runs_the_function_it_is_given():
    """`map(float, losses)` detaches each element; a function the analysis
    cannot run is taken to return what it is given."""
    source = """
        import torch

        net = torch.nn.Linear(3, 1)
        history = []
        for step in range(3):
            loss = net(torch.randn(2, 3)).pow(2).mean()
            loss.backward()
            history.extend(map({fn}, [loss]))
        print(history)
        """
    assert codes(source.format(fn="float")) == []
    assert codes(source.format(fn="lambda t: t.item()")) == []
    assert codes(source.format(fn="lambda t: t * 2")) == [("TL003", 9)]
    assert codes(source.format(fn="some_library.convert")) == [("TL003", 9)]
