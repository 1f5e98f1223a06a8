"""Path predicates (`analysis/paths.py`) and what they prune: facts of
conditions on stable expressions, their contradictions, and the guards that
carry them through joins and loop back edges."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from tapelint.analysis import paths
from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.interp.statements import iterates_at_least_once
from tapelint.analysis.paths import Fact, contradicts, decide
from tapelint.lint import lint_source
from tapelint.settings import Settings


def stable(name: str) -> str:
    return name


def test_literal_facts_on_one_key_exclude_each_other():
    l2, huber = Fact("kind", '"l2"', True), Fact("kind", '"huber"', True)
    assert contradicts(l2, huber)
    assert not contradicts(l2, huber.negated())
    assert contradicts(Fact("flag", None, True), Fact("flag", None, False))
    assert not contradicts(Fact("a", None, True), Fact("b", None, False))


def test_none_comparison_and_truthiness_agree():
    is_none = Fact("cache", "None", True)
    assert contradicts(is_none, Fact("cache", None, True))
    assert not contradicts(is_none, Fact("cache", None, False))
    assert contradicts(Fact("mode", '"train"', True), Fact("mode", None, False))


@pytest.mark.parametrize(
    "test, facts, expected",
    [
        ("not args.flag", {Fact("args.flag", None, True)}, False),
        ("args.flag and other", {Fact("args.flag", None, False)}, False),
        ("args.flag or other", {Fact("args.flag", None, True)}, True),
        ('kind == "huber"', {Fact("kind", '"l2"', True)}, False),
        ('kind != "huber"', {Fact("kind", '"l2"', True)}, True),
        ("x is not None", {Fact("x", "None", True)}, False),
        ("args.flag", {Fact("args.other", None, True)}, None),
        ("step % 2 == 0", {Fact("step", None, True)}, None),
    ],
)
def test_decide(test, facts, expected):
    assert decide(cst.parse_expression(test), frozenset(facts), stable) is expected


def test_assumed_takes_conjuncts_when_true_and_negated_disjuncts_when_false():
    both = paths.assumed(cst.parse_expression("a and not b"), True, stable)
    assert both == {Fact("a", None, True), Fact("b", None, False)}
    neither = paths.assumed(cst.parse_expression("a or b"), False, stable)
    assert neither == {Fact("a", None, False), Fact("b", None, False)}
    assert paths.assumed(cst.parse_expression("a or b"), True, stable) == frozenset()


def findings(code: str) -> list:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis.results()


def test_rebinding_forgets_the_fact():
    """`flag` rebound inside the loop: the next iteration's test says
    nothing about the last one's, so the reuse is found."""
    found = findings("""
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        flag = True
        for step in range(3):
            if flag:
                feats = (w * 2).exp()
            flag = step < 0
            feats.sum().backward()
    """)
    assert [type(h).__name__ for h in found] == ["HoistedHazard"]


@pytest.mark.parametrize("rebound, forgotten", [
    ("args", {"args.lr", "args"}),  # the name and every attribute below it
    ("args.lr", {"args.lr"}),
    ("arg", set()),  # a name the keys only start with, not one they are about
    ("args.l", set()),
    ("other", set()),
])
def test_rebinding_a_name_forgets_the_facts_and_guards_about_it(rebound, forgotten):
    from tapelint.analysis.state import State

    facts = frozenset((Fact("args.lr", "0.1", True), Fact("args", None, True), Fact("argsx", None, False)))
    state = State({}, {}, {})
    state.facts = facts
    state.guards = {("env", "loss", object()): facts, ("env", rebound, object()): frozenset()}
    state.rebound(rebound)
    assert {f.key for f in facts - state.facts} == forgotten
    assert [set(g) for g in state.guards.values()] == [set(state.facts)]  # its own binding's guard is gone


def test_a_value_both_sides_have_keeps_the_fact_every_path_of_one_side_has():
    """Joined, a value is guarded by what holds wherever it is: on one side
    every path has `F` (the side's facts), on the other the value is there
    only where `F` holds (its guard). So a later `not F` branch drops it."""
    from tapelint.analysis.state import State

    value = object()
    flag = Fact("cfg.prior", None, True)
    inside = State({"prior": frozenset({value})}, {}, {})
    inside.facts = frozenset({flag})
    outside = State({"prior": frozenset({value})}, {}, {})
    outside.guards = {("env", "prior", value): frozenset({flag})}
    joined = State.join(inside, outside)
    assert joined.facts == frozenset() and joined.guards == {("env", "prior", value): frozenset({flag})}
    joined.assume(frozenset({flag.negated()}))
    assert joined.env["prior"] == frozenset()


@pytest.mark.parametrize("on_both_sides", [True, False])
def test_the_guards_one_join_makes_from_the_same_sides_guards_are_one_set(on_both_sides):
    """Values guarded alike on each side come out of the join with one
    guard object, not a copy each: `assume` and `rebound` judge each guard
    object once (a join of hundreds of guarded values stays cheap)."""
    from tapelint.analysis.state import State

    values = [object() for _ in range(3)]
    flag, other = Fact("cfg.prior", None, True), Fact("cfg.mode", "'a'", True)
    left = State({"x": frozenset(values)}, {}, {})
    left.facts = frozenset({flag})
    left.guards = dict.fromkeys((("env", "x", v) for v in values), frozenset({other}))
    right = State({"x": frozenset(values) if on_both_sides else frozenset()}, {}, {})
    right.facts = frozenset({other})
    right.guards = dict.fromkeys((("env", "x", v) for v in values), frozenset({flag})) if on_both_sides else {}
    joined = State.join(left, right)
    guards = [joined.guards[("env", "x", v)] for v in values]
    assert guards[0] == {flag, other}  # (each side's guard and facts)
    assert all(guard is guards[0] for guard in guards)


def test_guards_that_differ_only_by_facts_every_path_has_are_the_same():
    from tapelint.analysis.state import State

    value = object()
    flag, other = Fact("cfg.prior", None, True), Fact("cfg.mode", "'a'", True)

    def state(guard: frozenset) -> State:
        made = State({"x": frozenset({value})}, {}, {})
        made.facts = frozenset({flag})
        made.guards = {("env", "x", value): guard} if guard else {}
        return made

    assert state(frozenset({flag, other})).same(state(frozenset({other})))
    assert state(frozenset({flag})).same(state(frozenset()))
    assert not state(frozenset({other})).same(state(frozenset()))


def test_same_flag_twice_prunes_the_cross_iteration_path():
    found = findings("""
        import torch
        w = torch.nn.Parameter(torch.ones(3))
        for step in range(3):
            if cfg.prior:
                prior = (w * 2).exp().sum()
            loss = (w * 3).exp().sum()
            if cfg.prior:
                loss = loss + prior
            loss.backward()
    """)
    assert found == []


def test_a_module_of_another_framework_is_not_analysed():
    """d2l's `mxnet.py`: `autograd.record()` and `l.backward()` are MXNet's."""
    code = textwrap.dedent("""
        {imports}
        w = np.ones(3, requires_grad=True)
        for X in batches:
            with autograd.record():
                l = (w * X).exp().sum()
            for step in range(2):
                l.backward()
    """)
    assert findings(code.format(imports="from mxnet import autograd, np")) == []
    as_torch = findings(code.format(imports="import torch as np\nfrom torch import autograd"))
    assert [type(h).__name__ for h in as_torch] == ["RepeatedHazard"]


# A nested generator is a closure over its defining scope, which holds the
# generator itself; a list made inside the loop makes the loop head look for
# garbage through every closure. That walk looped on the cycle without end
# (pytorch/examples' distributed RNN trainer, memory without bound).
CLOSURE_HOLDING_ITSELF = '''
import torch
import torch.nn as nn


def train():
    hidden = (torch.randn(2, 3), torch.randn(2, 3))
    model = nn.LSTM(3, 3)

    def batches():
        for _ in range(5):
            yield torch.randn(1, 2, 3)

    for epoch in range(10):
        for x in batches():
            output, hidden = model(x, hidden)
            torch.autograd.backward([output.sum()])
'''


def test_the_loop_head_walks_a_closure_that_holds_its_own_function_once():
    script = ("import sys; from tapelint.lint import lint_source; from tapelint.settings import Settings; "
              "lint_source(sys.stdin.read(), 'train.py', Settings(), precheck=False)")
    done = subprocess.run([sys.executable, "-c", script], input=CLOSURE_HOLDING_ITSELF, text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_literal_argument_decides_a_conditional_expression_in_the_callee():
    """axolotl's test runs `run(False)` then `run(True)`: only the second
    takes the arm that walks `shared`, so nothing is walked twice."""
    found = findings("""
        import torch
        w = torch.randn(4, 4, requires_grad=True)
        shared = w * 2.0

        def run(eager):
            out = torch.randn(3, 4) @ shared if eager else torch.randn(3, 4) @ w
            out.sum().backward()

        run(False)
        run(True)
    """)
    assert found == []


def test_the_same_literal_argument_twice_walks_the_same_arm_twice():
    found = findings("""
        import torch
        w = torch.randn(4, 4, requires_grad=True)
        shared = w * 2.0

        def run(eager=True):
            out = torch.randn(3, 4) @ shared if eager else torch.randn(3, 4) @ w
            out.sum().backward()

        run()
        run(eager=True)
    """)
    assert [type(h).__name__ for h in found] == ["SharedHazard"]


def test_a_literal_argument_decides_an_if_statement_until_rebound():
    both = """
        import torch
        w = torch.randn(4, requires_grad=True)
        cached = (w * 2).exp()

        def step(use_cache):
            {rebind}
            if use_cache:
                loss = cached.sum()
            else:
                loss = (w * 3).exp().sum()
            loss.backward()

        step(False)
        step(True)
    """
    assert findings(both.format(rebind="pass")) == []
    # rebound from something unknown: the fact is gone, both calls may walk `cached`
    found = findings(both.format(rebind="use_cache = bool(w.sum().item() > 0)"))
    assert [type(h).__name__ for h in found] == ["SharedHazard"]


def test_a_value_remade_after_each_backward_is_walked_once_by_the_next():
    """Each iteration walks the tensor the previous one made, then makes a
    new one: the released key of the previous iteration's tensor is dead
    once nothing binds it (`walks.without_dead_releases`)."""
    found = findings("""
        import torch
        policy = torch.nn.Linear(4, 2)
        log_alpha = torch.zeros(1, requires_grad=True)
        opt = torch.optim.Adam(list(policy.parameters()) + [log_alpha], lr=1e-3)
        alpha = log_alpha.exp().detach()
        for step in range(4):
            loss = (alpha * policy(torch.randn(8, 4))).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            alpha = log_alpha.exp()
    """)
    assert found == []


@pytest.mark.parametrize("inner", ["range(2)", "range(epoch)"])
def test_a_value_remade_in_an_inner_loop_is_walked_once(inner):
    """The same inside an outer loop, the inner loop run twice or maybe not
    at all: the outer loop's previous tensor is dead once the inner loop
    rebinds it, at the end of each inner iteration and where it is left."""
    found = findings(f"""
        import torch
        policy = torch.nn.Linear(4, 2)
        log_alpha = torch.zeros(1, requires_grad=True)
        opt = torch.optim.Adam(list(policy.parameters()) + [log_alpha], lr=1e-3)
        alpha = log_alpha.exp().detach()
        for epoch in range(3):
            for step in {inner}:
                loss = (alpha * policy(torch.randn(8, 4))).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                alpha = log_alpha.exp()
    """)
    assert found == []


def test_a_value_kept_past_the_next_backward_is_still_found():
    """The same, but the previous tensor also stays bound (`prev`): the
    next-but-one backward walks it again."""
    found = findings("""
        import torch
        policy = torch.nn.Linear(4, 2)
        log_alpha = torch.zeros(1, requires_grad=True)
        opt = torch.optim.Adam(list(policy.parameters()) + [log_alpha], lr=1e-3)
        alpha = log_alpha.exp().detach()
        prev = alpha
        for step in range(4):
            loss = (alpha * policy(torch.randn(8, 4))).mean() + prev.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prev = alpha
            alpha = log_alpha.exp()
    """)
    assert [type(h).__name__ for h in found] == ["HoistedHazard"]


# The temperature update of soft actor-critic (SAC): the policy loss walks
# the current alpha, the temperature step remakes it under the stable flag.
UPDATE = """
        def update(self, state):
            log_pi = self.policy(state).log_softmax(-1)
            policy_loss = ({used} * log_pi).mean()
            self.policy_optim.zero_grad()
            policy_loss.backward()
            self.policy_optim.step()
            if self.tune:
                alpha_loss = -(self.log_alpha * (log_pi.detach() + 1.0)).mean()
                self.alpha_optim.zero_grad()
                alpha_loss.backward()
                self.alpha_optim.step()
                {remake}
            {after}
"""
REMAKE = "self.alpha = self.log_alpha.exp()"


SAC = """
    import torch

    class Agent:
        def __init__(self, tune):
            self.policy = torch.nn.Linear(4, 2)
            self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=1e-3)
            self.tune = tune
            self.log_alpha = torch.zeros(1, requires_grad=True)
            self.alpha_optim = torch.optim.Adam([self.log_alpha], lr=1e-3)
            self.alpha = 0.2

""" + UPDATE.format(used="self.alpha", remake=REMAKE, after="{flip}") + """

    agent = Agent(tune=cfg.tune)
    for step in range(4):
        agent.update(torch.randn(8, 4))
"""


def test_a_flag_only_init_sets_takes_the_same_branch_in_every_call():
    """pranz24/pytorch-soft-actor-critic: `self.alpha` remade under `if
    self.automatic_entropy_tuning:` in each update; the path where a later
    update skips that branch (keeping an alpha the previous update walked)
    needs the flag to differ between calls, which it cannot."""
    assert findings(SAC.format(flip="pass")) == []


def test_a_flag_a_method_flips_is_not_stable():
    found = findings(SAC.format(flip="self.tune = not self.tune"))
    assert [type(h).__name__ for h in found] == ["HoistedHazard"]


def test_a_tracked_value_made_before_the_loop_and_remade_in_it_is_walked_once():
    """As above, with the first alpha made (tracked) before the loop: each
    tensor is walked once (it runs on PyTorch)."""
    found = findings("""
        import torch
        policy = torch.nn.Linear(4, 2)
        log_alpha = torch.zeros(1, requires_grad=True)
        opt = torch.optim.Adam(list(policy.parameters()) + [log_alpha], lr=1e-3)
        alpha = log_alpha.exp()
        for step in range(4):
            loss = (alpha * policy(torch.randn(8, 4))).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            alpha = log_alpha.exp()
    """)
    assert found == []


REMADE_ALPHA = """
    import torch
    policy = torch.nn.Linear(4, 2)
    log_alpha = torch.zeros(1, requires_grad=True)
    opt = torch.optim.Adam(list(policy.parameters()) + [log_alpha], lr=1e-3)
    batches = list(range(3))
    alpha = log_alpha.exp()
    for epoch in range(3):
        for batch in {inner}:
            loss = (alpha * policy(torch.randn(8, 4))).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            {remake}alpha = log_alpha.exp()
"""


@pytest.mark.parametrize("inner", ["range(4)", "batches"])
def test_a_value_made_before_nested_loops_and_remade_after_each_update_is_walked_once(inner):
    """Epochs of batches: the first batch of the first epoch walks the alpha
    made before the loops, every later batch the one the batch before made.
    An inner loop that may not run (`batches` of unknown length) joins the
    state before it; the alpha bound there was not yet walked on that path."""
    assert findings(REMADE_ALPHA.format(inner=inner, remake="")) == []


@pytest.mark.parametrize("inner", ["range(4)", "batches"])
def test_a_value_made_before_nested_loops_and_remade_only_sometimes_is_walked_twice(inner):
    """The hazard twin: alpha is remade only after odd batches, so the second
    batch walks the alpha the first walked (PyTorch fails there)."""
    code = textwrap.dedent(REMADE_ALPHA.format(inner=inner, remake="if batch % 2:\n                "))
    found = [(d.code, d.range.start.line) for d in lint_source(code, "t.py", Settings()).diagnostics]
    assert ("TL001", 7) in found  # the alpha made before the loops


def test_a_value_made_in_init_and_remade_after_each_update_is_walked_once():
    """Soft actor-critic's temperature: `self.alpha` made in `__init__` (before
    the training loop) and remade after every update."""
    assert findings("""
        import torch

        class Agent:
            def __init__(self):
                self.policy = torch.nn.Linear(4, 2)
                self.log_alpha = torch.zeros(1, requires_grad=True)
                self.opt = torch.optim.Adam(list(self.policy.parameters()) + [self.log_alpha], lr=1e-3)
                self.alpha = self.log_alpha.exp()

            def update(self, obs):
                loss = (self.alpha * self.policy(obs)).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                self.alpha = self.log_alpha.exp()

        agent = Agent()
        for step in range(4):
            agent.update(torch.randn(8, 4))
    """) == []


# pranz24/pytorch-soft-actor-critic's main loop, rewritten small: the agent
# remakes its temperature after every update, which runs only on some steps
# (a test no fact decides), and another object's method is called after it.
SAC_LOOP = """
    import itertools
    import torch

    class Buffer:
        def __init__(self):
            self.size = 0

        def add(self, item):
            self.size = self.size + 1

    class Agent:
        def __init__(self, cfg):
            self.policy = torch.nn.Linear(4, 2)
            self.policy_optim = torch.optim.Adam(self.policy.parameters(), lr=1e-3)
            self.alpha = cfg.alpha
            self.tune = cfg.tune
            self.log_alpha = torch.zeros(1, requires_grad=True)
            self.alpha_optim = torch.optim.Adam([self.log_alpha], lr=1e-3)
            {init}

""" + UPDATE.format(used="{used}", remake="{remake}", after="return policy_loss.item()") + """

    agent = Agent(cfg)
    buffer = Buffer()
    steps = 0
    for episode in itertools.count(1):
        done = False
        while not done:
            {call}
            buffer.add(steps)
            steps += 1
            done = steps % 5 == 0
"""
UPDATE_IF = "if steps > cfg.warmup:\n                agent.update(torch.randn(8, 4))"
UPDATE_LOOP = ("if steps > cfg.warmup:\n                for i in range(cfg.updates):\n"
               "                    agent.update(torch.randn(8, 4))")


@pytest.mark.parametrize("call", [UPDATE_IF, UPDATE_LOOP, UPDATE_IF.replace("steps > cfg.warmup", "1")],
                         ids=["if", "loop-in-if", "if-1"])
def test_a_value_remade_after_each_update_on_some_steps_is_walked_once(call):
    """Each update walks the alpha the previous update made, then remakes
    it. On the path that skips the update nothing is walked; on the one
    that runs it the previous alpha is unbound afterwards: its release is
    dead on that path before the paths join. The call on `buffer` after it
    leaves the agent's attributes as they were (their guards stay)."""
    code = SAC_LOOP.format(init="pass", used="self.alpha", remake=REMAKE, call=call)
    assert findings(code) == []


@pytest.mark.parametrize("call", [UPDATE_IF, UPDATE_LOOP], ids=["if", "loop-in-if"])
def test_an_alpha_kept_one_update_longer_is_still_found(call):
    """The same loop, but the update also reads the alpha of the update
    before (`self.prev`): that tensor was walked by the previous update."""
    code = SAC_LOOP.format(init="self.prev = self.alpha", used="(self.alpha + self.prev)",
                           remake="self.prev = self.alpha\n                " + REMAKE, call=call)
    assert [type(h).__name__ for h in findings(code)] == ["HoistedHazard"]


@pytest.mark.parametrize("call", [UPDATE_IF, UPDATE_LOOP], ids=["if", "loop-in-if"])
def test_an_alpha_not_remade_is_still_found(call):
    """Made once, in `__init__`, and never remade: every update walks it."""
    code = SAC_LOOP.format(init="self.alpha = self.log_alpha.exp()", used="self.alpha", remake="pass", call=call)
    assert [type(h).__name__ for h in findings(code)] == ["HoistedHazard"]


@pytest.mark.parametrize(("iterable", "runs"), [
    ("range(4)", True), ("range(1, 3)", True), ("range(0x2)", True), ("[a, b]", True), ("(a,)", True),
    ("range(0)", False), ("range(3, 3)", False), ("range(n)", False), ("range(0, 8, 2)", False),
    ("[]", False), ("[*xs]", False), ("loader", False), ("range(stop=3)", False),
])
def test_a_loop_runs_at_least_once_only_over_literal_non_empty_ranges_and_lists(iterable, runs):
    """Only then is the state before the loop not one of the states after it."""
    assert iterates_at_least_once(cst.parse_expression(iterable)) is runs


LAST_DRAW = """
import torch
import torch.nn as nn
{header}
gen = nn.Linear(2, 3)
disc = nn.Linear(3, 1)

def train({params}):
    for step in range(3):
        for _ in range({count}):
            fake = gen(torch.randn(4, 2))
        (-disc(fake).mean()).backward()
"""


@pytest.mark.parametrize(("header", "params", "count", "constant"), [
    ("DRAWS = 2", "", "DRAWS", True),
    ("n_g, n_d = 2, 1", "", "n_g", True),
    ("START, STOP = 1, 3", "", "START, STOP", True),
    ("DRAWS = 0", "", "DRAWS", False),  # a constant, but the range is empty
    ("DRAWS = 2\nDRAWS = 0", "", "DRAWS", False),  # bound twice
    ("DRAWS = 2\nfor DRAWS in range(0): pass", "", "DRAWS", False),
    ("DRAWS = 2\ndef reset():\n    global DRAWS\n    DRAWS = 0", "", "DRAWS", False),
    ("DRAWS = 2\nimport os as DRAWS", "", "DRAWS", False),
    ("DRAWS = 2\nfrom config import *", "", "DRAWS", False),  # a star import may rebind it
    ("DRAWS = 2", "DRAWS=0", "DRAWS", False),  # the function's own parameter
    ("DRAWS = int('2')", "", "DRAWS", False),
], ids=["one", "tuple", "two-bounds", "empty", "twice", "for-target", "global", "import-as", "star", "param",
        "not-a-literal"])
def test_a_range_over_a_module_integer_constant_runs(header, params, count, constant):
    """`for _ in range(DRAWS)` with DRAWS bound once, at the module's top
    level, to a positive integer literal always runs: `fake` after it is this
    step's. Otherwise the path that skips it carries the last step's `fake`,
    which that step's backward freed (TL001)."""
    code = LAST_DRAW.format(header=header, params=params, count=count)
    assert [type(h).__name__ for h in findings(code)] == ([] if constant else ["HoistedHazard"])
