"""A `for` over an index reads a container's elements by it: `losses[i]` in
`for i in range(n)` (or with the counter of `enumerate`) is another element in
each iteration, so backwarding each element once is no reuse, while reading
one element every time (`losses[0]`), or an index the body rebinds, still is.
The losses are kept by an earlier loop, so the name that last held one
(`loss`) is one of many tensors, not a value every element shares."""

from __future__ import annotations

import textwrap

import pytest

from tapelint.lint import lint_source
from tapelint.settings import Semantics, Settings

PROGRAM = """
    import torch
    import torch.nn as nn

    model = nn.Linear(3, 1)
    losses = []
    for micro in range(3):
        loss = model(torch.randn(4, 3)).pow(2).mean()
        losses.append(loss)

    for {loop}:
        {body}
        loss = losses[{index}]
        loss.backward()
"""


def codes(loop: str, index: str, body: str = "pass", semantics: Semantics = Semantics.TORCH) -> list[str]:
    source = textwrap.dedent(PROGRAM.format(loop=loop, index=index, body=body))
    result = lint_source(source, "prog.py", Settings(semantics=semantics), precheck=False)
    return sorted(d.code for d in result.diagnostics)


@pytest.mark.parametrize("semantics", [Semantics.TORCH, Semantics.STRICT])
@pytest.mark.parametrize("loop, index", [
    ("micro in range(3)", "micro"),
    ("micro in range(len(losses))", "micro"),
    ("micro, name in enumerate('abc')", "micro"),
])
def test_each_element_read_by_the_loop_index_is_walked_once(loop, index, semantics):
    assert codes(loop, index, semantics=semantics) == []


@pytest.mark.parametrize("loop, index, body", [
    ("micro in range(3)", "0", "pass"),  # the same element every time
    ("micro in range(3)", "micro", "micro = 0"),  # the index rebound: not the iteration's own
    ("micro in range(3)", "micro", "micro += 0"),  # ... however it is rebound
    ("micro in range(3)", "micro", "micro: int = 0"),
    ("micro in range(3)", "micro", "print(micro := 0)"),
    ("micro in range(3)", "micro", "for micro in [0]: pass"),
    ("micro in range(3)", "micro", "with open(__file__) as micro: pass"),
    ("micro in range(3)", "step", "step = 0"),  # another name, not the loop's index
])
def test_one_element_walked_in_every_iteration_is_still_a_reuse(loop, index, body):
    assert set(codes(loop, index, body)) & {"TL001", "TL004"}


def test_no_syntax_fact_outlives_its_analysis():
    """The facts memoised per analysis hold their trees' nodes: a long-lived
    process (the language server) must not keep every document it linted."""
    from tapelint.analysis import syntax

    assert codes("micro in range(3)", "micro") == []
    assert not any(syntax._MEMOS)
