"""Unit tests of the provenance analysis itself: what the abstract state
holds, not only what the rules end up reporting."""

from __future__ import annotations

import textwrap

import libcst as cst

from tapelint.analysis import hazards
from tapelint.analysis.driver import ModuleAnalysis
from tapelint.analysis.imports import ImportMap
from tapelint.analysis.model import OPAQUE, AbstractNode, Carried, ModuleRef, Tracked
from tapelint.ops import Saves
from tapelint.settings import Settings


def analyse(code: str) -> ModuleAnalysis:
    analysis = ModuleAnalysis(cst.parse_module(textwrap.dedent(code)), Settings())
    analysis.run()
    return analysis


def nodes(analysis: ModuleAnalysis, name: str) -> list:
    return [v for v in analysis.module_env[name] if isinstance(v, (AbstractNode, Carried))]


def only(analysis: ModuleAnalysis, name: str) -> AbstractNode:
    found = nodes(analysis, name)
    assert len(found) == 1, found
    return found[0]


def test_imports_resolve_aliases():
    module = cst.parse_module(
        "import torch as T\nfrom torch import nn, autograd\nfrom torch.nn import functional as F\n"
        "import torch.nn.functional as G\nfrom torch.autograd import grad as g\n"
    )
    imports = ImportMap.of(module)
    assert imports.resolve("T.exp") == "torch.exp"
    assert imports.resolve("nn.Linear") == "torch.nn.Linear"
    assert imports.resolve("F.relu") == "torch.nn.functional.relu"
    assert imports.resolve("G.relu") == "torch.nn.functional.relu"
    assert imports.resolve("autograd.grad") == "torch.autograd.grad"
    assert imports.resolve("g") == "torch.autograd.grad"
    assert imports.resolve("numpy.exp") is None


def test_tracking_sources_and_sanitizers():
    a = analyse(
        """
        import torch
        import torch.nn as nn
        x = torch.tensor([1.0], requires_grad=True)
        c = torch.tensor([1.0])
        p = nn.Parameter(torch.zeros(2))
        y = x.exp()
        d = y.detach()
        i = y.item()
        lin = nn.Linear(2, 2)
        out = lin(c)
        with torch.no_grad():
            ng = x.exp()
        """
    )
    x = only(a, "x")
    assert x.leaf and x.tracked is Tracked.YES
    assert only(a, "c").tracked is Tracked.NO
    assert only(a, "p").leaf and only(a, "p").tracked is Tracked.YES
    y = only(a, "y")
    assert not y.leaf and y.tracked is Tracked.YES and y.saves is Saves.TENSORS and y.parents == [x]
    assert a.module_env["d"] == frozenset() and a.module_env["i"] == frozenset()
    assert only(a, "out").tracked is Tracked.YES  # a parametric module tracks an untracked input
    ng = only(a, "ng")
    assert ng.tracked is Tracked.NO and ng.parents == []


def test_frozen_module_and_unknown_values():
    a = analyse(
        """
        import torch
        import torch.nn as nn
        enc = nn.Linear(2, 2)
        enc.requires_grad_(False)
        frozen = enc(torch.randn(1, 2))
        enc2 = nn.Linear(2, 2)
        for p in enc2.parameters():
            p.requires_grad = False
        frozen2 = enc2(torch.randn(1, 2))
        def f(model, batch):
            return model(batch)
        u = f(enc, torch.randn(1, 2))
        """
    )
    assert only(a, "frozen").tracked is Tracked.NO
    assert only(a, "frozen2").tracked is Tracked.NO
    assert any(isinstance(v, ModuleRef) and v.frozen for v in a.module_env["enc"])


def test_operator_saves_follow_the_table():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        add = x + 1
        mul = x * 2
        view = x.reshape(2, 1)
        unknown = mystery(x)
        """
    )
    assert only(a, "add").saves is Saves.NOTHING
    assert only(a, "mul").saves is Saves.TENSORS
    assert only(a, "view").saves is Saves.NOTHING
    unknown = only(a, "unknown")
    assert unknown.saves is Saves.UNKNOWN and unknown.tracked is Tracked.YES


def test_branches_merge_and_aliases_share_nodes():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        if cond:
            v = x.exp()
        else:
            v = x.detach()
        alias = v
        """
    )
    assert a.module_env["alias"] is a.module_env["v"] or a.module_env["alias"] == a.module_env["v"]
    assert len(nodes(a, "v")) == 1  # the detached branch holds no graph


def test_loop_carried_value_reaches_previous_iteration():
    a = analyse(
        """
        import torch
        w = torch.ones(2, requires_grad=True)
        h = torch.zeros(2)
        for step in range(3):
            h = torch.tanh(h * w)
        """
    )
    tanh = only(a, "h") if len(nodes(a, "h")) == 1 else next(n for n in nodes(a, "h") if isinstance(n, AbstractNode) and n.op == "tanh")
    mul = tanh.parents[0]
    assert any(isinstance(p, Carried) and p.node is tanh for p in mul.parents)
    loop = tanh.loops[0]
    assert hazards.feeds_itself(tanh, loop)


def test_hoisted_node_lies_outside_the_loop_of_its_backward():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        feats = x.exp()
        for step in range(3):
            loss = (feats * 2).sum()
            loss.backward()
        """
    )
    feats = only(a, "feats")
    (event,) = a.events.values()
    assert feats.loops == () and len(event.loops) == 1
    walked = {key[0] for key, _ in hazards.walk(event.roots)}
    assert feats in walked


def test_retain_graph_keeps_nodes_out_of_the_released_set():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        loss = (x.exp() * x).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        loss.backward()
        """
    )
    repeated = [h for h in a.results() if h.kind.value == "repeated"]
    # the second call frees, the third fails: exactly one repeated-backward finding
    first, second, third = sorted(a.events.values(), key=lambda e: e.order)
    (hazard,) = repeated
    assert hazard.fails_at is third and hazard.first_backward is second
    # and the retain on the first call only serves the second: TL006's view
    (retain,) = [h for h in a.results() if h.kind.value == "retain-to-combine"]
    assert retain.first_backward is first and retain.fails_at is second


def test_unknown_retain_graph_is_not_a_confident_release():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        loss = (x.exp() * x).sum()
        loss.backward(retain_graph=keep)
        loss.backward()
        """
    )
    assert a.results() == []


def test_containers_and_tuples_carry_their_elements():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        items = []
        items.append(x.exp())
        first = items[0]
        pair = (x.sin(), x.cos())
        s, c = pair
        squares = [t * t for t in items]
        """
    )
    assert only(a, "first").op == "exp"
    assert only(a, "s").op == "sin" and only(a, "c").op == "cos"
    (lst,) = a.module_env["squares"]
    (element,) = a.module_env[lst.key]
    assert element.op == "*" and element.parents[0].op == "exp"


def test_called_function_creates_nodes_in_the_callers_loop():
    a = analyse(
        """
        import torch
        w = torch.ones(2, requires_grad=True)
        def compute(v):
            return (v * w).sum()
        for step in range(2):
            loss = compute(torch.ones(2))
        """
    )
    loss = only(a, "loss")
    assert loss.tracked is Tracked.YES and len(loss.loops) == 1 and loss.op == "sum"


def test_backward_proves_its_root_tracked():
    a = analyse(
        """
        def train(model, batches):
            for x in batches:
                loss = model(x).sum()
                loss.backward()
        """
    )
    (event,) = a.events.values()
    (root,) = event.roots
    assert root.tracked is Tracked.UNKNOWN and a.is_tracked(root)


def test_zip_and_enumerate_keep_positions_apart():
    a = analyse(
        """
        import torch
        x = torch.ones(2, requires_grad=True)
        tracked = [x.exp()]
        plain = [torch.zeros(2)]
        for i, (t, p) in enumerate(zip(tracked, plain)):
            pass
        """
    )
    assert only(a, "t").op == "exp"
    assert only(a, "p").tracked is Tracked.NO
    assert a.module_env["i"] == frozenset()


def test_requires_grad_with_a_runtime_flag_is_unknown():
    a = analyse(
        """
        import torch
        v = torch.zeros(2).requires_grad_(need_graph)
        """
    )
    assert only(a, "v").tracked is Tracked.UNKNOWN


def test_state_left_by_other_methods_is_not_computed_once():
    """`select_action` runs between steps: its log-probs are fresh each step,
    unlike what `__init__` caches."""
    a = analyse(
        """
        import torch
        import torch.nn as nn
        class Agent:
            def __init__(self):
                self.policy = nn.Linear(2, 2)
                self.saved = []
            def select_action(self, state):
                self.saved.append(self.policy(state).sum())
            def finish_episode(self):
                loss = torch.stack(self.saved).sum()
                loss.backward()
                self.saved = []
        """
    )
    assert a.results() == []


def test_accumulating_values_no_backward_walks_is_not_a_training_total():
    """Jacobian rows gathered with autograd.grad inside the loop: the loop
    runs a backward, but not through what it accumulates."""
    a = analyse(
        """
        import torch
        x = torch.ones(3, requires_grad=True)
        w = torch.ones(3, requires_grad=True)
        rows = ()
        for i in range(3):
            y = (x * x)[i]
            (g,) = torch.autograd.grad(y, x, retain_graph=True)
            rows += ((w * i).sum(),)
        """
    )
    assert [h.kind.value for h in a.results()] == []


def test_requires_grad_attribute_assignment_follows_its_literal():
    a = analyse(
        """
        import torch
        w = torch.zeros(2)
        w.requires_grad = True
        v = torch.ones(2, requires_grad=True)
        v.requires_grad = False
        u = torch.zeros(2)
        u.requires_grad = flag
        """
    )
    assert only(a, "w").leaf and only(a, "w").tracked is Tracked.YES
    assert only(a, "v").tracked is Tracked.NO
    assert only(a, "u").tracked is Tracked.UNKNOWN


def test_a_tuple_rebuilt_from_itself_stays_shallow():
    """`key = (key, x)` in a loop grows a deeper tuple on every pass; in
    nested loops that once took gigabytes and never ended (torch's
    sparse/_triton_ops_meta.py). Nesting is bounded, the values inside kept."""
    from tapelint.analysis.interp.statements import MAX_PASSES
    from tapelint.analysis.model import MAX_TUPLE_DEPTH, TupleVal

    assert MAX_TUPLE_DEPTH < MAX_PASSES + 1  # unbounded, this loop would build MAX_PASSES + 1 levels
    a = analyse(
        """
        import torch
        w = torch.ones(2, requires_grad=True)
        key = ()
        for i in range(3):
            key = (key, w * i)
        """
    )
    tuples = [v for v in a.module_env["key"] if isinstance(v, TupleVal) and v.items]
    assert tuples

    def depth(value) -> int:
        inner = [depth(v) for item in value.items for v in item if isinstance(v, TupleVal)]
        return 1 + max(inner, default=0)

    def leaves(value) -> set:
        out = set()
        for item in value.items:
            for v in item:
                out |= leaves(v) if isinstance(v, TupleVal) else {v}
        return out

    assert all(depth(t) <= MAX_TUPLE_DEPTH for t in tuples)
    tracked = [v for t in tuples for v in leaves(t) if isinstance(v, (AbstractNode, Carried))]
    assert any(v.tracked is Tracked.YES for v in tracked)


def test_one_name_resolution_scope_then_enclosing_then_object():
    """Every lookup goes through `Frame.resolve`: this scope's state, then the
    enclosing environments innermost first, then what `__init__` left on
    `self` — one precedence for names, attribute paths and calls alike."""
    from tapelint.analysis.driver import ModuleAnalysis as Driver
    from tapelint.analysis.interp.frame import Frame
    from tapelint.analysis.program import ClassInfo
    from tapelint.analysis.state import State

    driver = Driver(cst.parse_module("x = 1\n"), Settings())
    mine, closure, module, obj = (frozenset((object(),)) for _ in range(4))
    owner = ClassInfo(cst.ClassDef(cst.Name("C"), cst.IndentedBlock(())), {}, False, False,
                      state={"self.h": obj, "self.only_on_object": obj})
    frame = Frame(driver.program, driver.store, driver, scope=driver.program.module, loops=(), context=(),
                  owner=owner, fallback=({"self.h": closure, "y": closure}, {"self.h": module, "z": module}))
    state = State({"self.h": mine}, {}, {})
    assert frame.resolve("self.h", state) is mine
    del state.env["self.h"]
    assert frame.resolve("self.h", state) is closure
    assert frame.resolve("z", state) is module
    assert frame.resolve("self.only_on_object", state) is obj
    assert frame.resolve("unbound", state) is None
    assert frame.lookup("unbound", state) == frozenset((OPAQUE,))


def test_a_parameter_loop_freezes_by_what_it_does_not_how_it_is_spelled():
    """The frozen-parameters loop is recognised on the syntax tree: any
    spacing, a one-line body, `requires_grad_(False)`; a comment that says
    so does not freeze anything."""
    a = analyse(
        """
        import torch
        import torch.nn as nn
        a, b, c, d = nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)
        for p in a.parameters():
            p.requires_grad=False
        for p in b.parameters(): p.requires_grad_(False)
        for name, p in c.named_parameters():
            print(name)  # p.requires_grad = False
        for p in d.parameters():
            p.requires_grad = True
        ya, yb, yc, yd = a(torch.randn(1, 2)), b(torch.randn(1, 2)), c(torch.randn(1, 2)), d(torch.randn(1, 2))
        """
    )
    assert [m.frozen for name in "abcd" for m in a.module_env[name] if isinstance(m, ModuleRef)] == [
        True, True, False, False]


def test_continue_break_return_and_raise_end_their_path():
    """A path that ends (`continue`, `break`, `return`, `raise`) does not flow
    into what follows it: the backward on it and the one after the `if` are
    never both run on one loss. Without the ending, they are (TL004)."""
    template = """
        import torch
        w = torch.ones(2, requires_grad=True)
        def train():
            for step in range(3):
                loss = (w.exp() * step).sum()
                if step == 1:
                    loss.backward()
                    {ending}
                loss.backward()
        train()
        """
    for ending in ("continue", "break", "return", "raise RuntimeError('stop')"):
        assert analyse(template.format(ending=ending)).results() == [], ending
    kinds = [h.kind.value for h in analyse(template.format(ending="pass")).results()]
    assert kinds == ["repeated"]


def test_a_handler_starts_from_what_its_try_body_did_before_raising():
    a = analyse(
        """
        import torch
        w = torch.ones(2, requires_grad=True)
        loss = w.exp().sum()
        try:
            loss.backward()
            raise RuntimeError("retry")
        except RuntimeError:
            loss.backward()
        """
    )
    assert [h.kind.value for h in a.results()] == ["repeated"]
