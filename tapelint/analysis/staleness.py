"""Stale graphs (TL007): does a backward walk a node that saved a parameter
which an optimizer step changed in place after the node was created?

PyTorch keeps a version counter per tensor: a node that saves a tensor for
backward records its version, and the backward that unpacks it checks it
(`one of the variables needed for gradient computation has been modified by
an inplace operation`). `optimizer.step()` updates every parameter it holds
in place, so a graph built before the step and walked after it fails when a
node of it saved one of those parameters.

The model (docs/analysis.md, "Stale graphs"):

* an optimizer (`OptimizerRef`) is the set of parameter *owners* it updates:
  a torch layer's construction site, a user class (everything its
  `__init__` leaves on `self`, transitively), a tensor leaf's site;
* a node saves a parameter when one of its parents is that parameter's
  leaf and its op saves that operand (measured in reference/torch/: a
  `Linear`, `x @ w` or `x * w` saves the weight only for the gradient of a
  tracked input; a convolution or a normalisation always; an embedding never;
  an addition never);
* a step marks every node reachable from the live bindings that saves a
  parameter of its optimizer as stale (`State.stale`, aged at a loop's back
  edge like released keys, so the next iteration's fresh forward is not);
* a backward that reaches a stale key — not one an earlier backward released:
  PyTorch checks that first and reports the second-backward error — is a
  `StaleHazard`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.abbreviations import abbreviate
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    Carried,
    FunctionRef,
    GraphValue,
    ListRef,
    ModuleRef,
    OptimizerRef,
    StepEvent,
    Tracked,
    TupleVal,
    tuple_of,
)
from tapelint.analysis.state import EMPTY, Key, State, Vals
from tapelint.analysis.store import StoreView
from tapelint.analysis.submodules import sequential_layers
from tapelint.analysis.syntax import keyword_value, walk_nodes
from tapelint.analysis.torch_api import PARAMETER_METHODS
from tapelint.analysis.walks import key_of, steps, walk
from tapelint.ops import MODULES, PARAMETRIC_MODULES

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

# Layers whose backward always needs their weight (measured: ConvolutionBackward0,
# NativeLayerNorm/BatchNorm, the fused recurrent layers, attention's projections).
ALWAYS_SAVING_LAYERS = frozenset(
    ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv2d",
     "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "RNN", "LSTM", "GRU",
     "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
     "TransformerDecoderLayer", "PReLU")
)
# Layers whose backward never reads their weight (EmbeddingBackward0 saves the indices).
NEVER_SAVING_LAYERS = frozenset(("Embedding", "EmbeddingBag"))
# Ops that save an operand only for the gradient of another, tracked operand
# (MulBackward0, MmBackward0, AddmmBackward0, DotBackward0).
OPERAND_SAVING_OPS = frozenset(("*", "@", "mul", "matmul", "mm", "bmm", "mv", "dot", "linear", "einsum", "addmm"))
# Functional convolutions: ConvolutionBackward0 saves the weight whatever requires grad.
ALWAYS_SAVING_OPS = frozenset(("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                               "conv_transpose3d", "layer_norm", "batch_norm", "group_norm"))
# `torch.optim` classes that are not optimizers.
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")


def is_optimizer_class(name: str) -> bool:
    """Does the canonical `name` (`torch.optim.Adam`) construct an optimizer?"""
    last = name.rsplit(".", 1)[-1]
    return name.startswith("torch.optim.") and last[:1].isupper() and not name.startswith(NOT_OPTIMIZERS)


def optimizer(frame: Frame, call: cst.Call, args: list, state: State) -> Vals:
    """`torch.optim.Adam(netD.parameters(), lr=...)`: the parameters it updates."""
    positional = [vals for keyword, vals in args if keyword is None]
    params = positional[0] if positional else next((vals for keyword, vals in args if keyword == "params"), EMPTY)
    roots = set(_roots(params, state))
    expr = call.args[0].value if call.args and call.args[0].keyword is None else keyword_value(call, "params")
    instances: set[ModuleRef] = set()
    if expr is not None:
        for value in _parameter_calls(frame, expr, state):
            if isinstance(value, ModuleRef):
                if value.owner is not None:
                    roots.add(value.owner)
                if value.user_class is not None and value.site is not None:
                    instances.add(value)
            else:
                roots.add(value)
    text = abbreviate(frame.program.module.code_for_node(expr), 50) if expr is not None else "its parameters"
    return frozenset((OptimizerRef(call, frozenset(roots), text, frozenset(instances), frame.context),))


def configured_optimizers(returned: Vals, state: State, method: Optional[cst.FunctionDef] = None) -> Vals:
    """What Lightning's `self.optimizers()` gives, from what the module's
    `configure_optimizers()` (`method`) returned: one optimizer as itself,
    several as they were returned (a tuple keeps their positions for `opt_g,
    opt_d = self.optimizers()`, and so does a list written as a literal of
    optimizers, `[opt_g, opt_d]`; another list's are joined, so each name may
    be any of them), the optimizers of `([opts], [schedulers])` and of
    `{"optimizer": opt, "lr_scheduler": ...}` dicts."""
    out: set = set()
    for value in returned:
        if isinstance(value, TupleVal):
            items = [_optimizers_of(frozenset(item), state) for item in value.items]
            if items and all(len(item) == 1 for item in items):
                out.add(tuple_of(items))
            elif items:
                out |= configured_optimizers(value.items[0], state, method)
        elif isinstance(value, ListRef):
            optimizers = _optimizers_of(frozenset((value,)), state)
            positions = _literal_positions(value.site, optimizers, method) if method is not None else None
            # a list's elements are joined unless its literal says which is which
            out |= {tuple_of(positions)} if positions else optimizers
        elif isinstance(value, OptimizerRef):
            out.add(value)
    return frozenset(out)


def _literal_positions(site: cst.CSTNode, optimizers: frozenset, method: cst.FunctionDef) -> Optional[list[frozenset]]:
    """The optimizer at each position of the list literal `site` in `method`,
    when every element is an optimizer's construction or a name `method`
    assigns once, to one; None otherwise."""
    if type(site) is not cst_nodes.List or len(site.elements) < 2:
        return None
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for node in walk_nodes(method):
        if type(node) is cst_nodes.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst_nodes.Name:
            assigned.setdefault(node.targets[0].target.value, []).append(node.value)
    positions = []
    for element in site.elements:
        expr: Optional[cst.BaseExpression] = element.value
        if type(element) is not cst_nodes.Element:
            return None
        if type(expr) is cst_nodes.Name:
            values = assigned.get(expr.value, [])
            expr = values[0] if len(values) == 1 else None
        found = frozenset(o for o in optimizers if o.site is expr)
        if len(found) != 1:
            return None
        positions.append(found)
    return positions


def _optimizers_of(vals: Vals, state: State) -> frozenset:
    """The optimizers among `vals` or the elements of a list or dict there."""
    out: set = set()
    for value in vals:
        if isinstance(value, OptimizerRef):
            out.add(value)
        elif isinstance(value, ListRef):
            out |= {v for v in state.env.get(value.key, EMPTY) if isinstance(v, OptimizerRef)}
    return frozenset(out)


def _roots(vals: Iterable, state: State) -> Iterator[cst.CSTNode]:
    """The parameter roots in an optimizer's argument: parameter leaves (a
    module's, an `nn.Parameter`, a tensor with `requires_grad=True`) met
    through lists, param-group dicts, tuples and calls such as `chain(...)`."""
    stack = list(vals)
    seen: set[int] = set()
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Carried):
            stack.append(value.node)
        elif value is OPAQUE:
            continue
        elif isinstance(value, AbstractNode):
            if value.leaf:
                if value.tracked is not Tracked.NO:
                    yield value.site
            else:
                stack.extend(value.parents)
        elif isinstance(value, ListRef):
            stack.extend(state.env.get(value.key, EMPTY))
        elif isinstance(value, TupleVal):
            for item in value.items:
                stack.extend(item)
        elif isinstance(value, ModuleRef) and value.owner is not None:
            yield value.owner


class _ParameterCalls(cst.CSTVisitor):
    """Collects the receivers of `m.parameters()` calls (a class of the
    module, not of a call: a class made per call is a reference cycle)."""

    def __init__(self) -> None:
        super().__init__()
        self.receivers: list[cst.BaseExpression] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst_nodes.Attribute and func.attr.value in PARAMETER_METHODS and dotted_name(func.value):
            self.receivers.append(func.value)


def _parameter_calls(frame: Frame, expr: cst.BaseExpression, state: State) -> set:
    """The modules of every `m.parameters()` written in `expr`, also where
    what surrounds it is a library call the analysis does not model
    (`itertools.chain(g.parameters(), e.parameters())`); `self.parameters()`
    in a method of a model is its class."""
    finder = _ParameterCalls()
    expr.visit(finder)
    found: set = set()
    for receiver in finder.receivers:
        if type(receiver) is cst_nodes.Name and receiver.value == "self":
            if frame.owner is not None:
                found.add(frame.owner.node)
            continue
        for value in frame.eval(receiver, state):  # a name or attribute path: evaluating it has no effect
            if isinstance(value, ModuleRef) and value.owner is not None:
                found.add(value)
    return found


def owners(frame: Frame, roots: Iterable[cst.CSTNode]) -> frozenset:
    """Every parameter owner under `roots`: a user class stands for what its
    `__init__` left on `self` (layers, parameters, submodules), transitively."""
    out: set = set()
    stack = list(roots)
    while stack:
        root = stack.pop()
        if root in out:
            continue
        out.add(root)
        if type(root) is not cst_nodes.ClassDef:
            continue
        info = frame.program.class_info(root)
        if info is None:
            continue
        if not info.initialised:
            frame.recorder.initialise(info)
        for vals in info.state.values():
            for value in vals:
                if isinstance(value, ModuleRef) and value.owner is not None:
                    stack.append(value.owner)
                    stack.extend(layer.owner for layer in sequential_layers(value) if layer.owner is not None)
                elif isinstance(value, AbstractNode) and value.leaf and value is not OPAQUE \
                        and value.tracked is not Tracked.NO:
                    stack.append(value.site)
    return frozenset(out)


def on_step(frame: Frame, call: cst.Call, func: cst.Attribute, receiver: Vals, args: list, state: State) -> None:
    """`optimizer.step()` (or `scaler.step(optimizer)`): every node reachable
    from a live binding that saved one of the updated parameters is stale."""
    if any(isinstance(v, FunctionRef) for _, vals in args for v in vals):
        # `optimizer.step(closure)` (LBFGS) runs the closure's forward and backward
        # before it updates; the interpreter runs the closure after this call, so
        # marking now would make the closure's own fresh graph look stale.
        return
    stepped = [v for v in receiver if isinstance(v, OptimizerRef)]
    if not stepped:
        stepped = [v for _, vals in args[:1] for v in vals if isinstance(v, OptimizerRef)]
    if not stepped:
        return
    updated = [owners(frame, opt.roots) for opt in stepped]
    # Which optimizer steps may be unknown (`opt_g, opt_d = self.optimizers()` read
    # from a list, a branch that picks one): only what every candidate would make
    # stale surely is.
    keys = set.intersection(*(_stale_keys(frame, owned, opt.instances, state) for opt, owned in zip(stepped, updated)))
    label = abbreviate(frame.program.module.code_for_node(call))
    event = StepEvent(call, frame.loops, frame.context, label, _updates(frame, stepped[0]), frozenset().union(*updated))
    frame.recorder.step(event)
    for key in keys:
        state.stale[key] = event


def _updates(frame: Frame, opt: OptimizerRef) -> str:
    """What the stepped optimizer updates, for the message: its parameter
    argument as written, and the call that built it when that was a helper
    of the stepping scope (`make_optimizer(discriminator)`, whose argument
    reads `model.parameters()`)."""
    depth = len(frame.context)
    if opt.context[:depth] == frame.context and len(opt.context) > depth and type(opt.context[depth]) is cst_nodes.Call:
        return f"{opt.updates}, as built by `{abbreviate(frame.program.module.code_for_node(opt.context[depth]))}`"
    return opt.updates


def on_update(frame: Frame, site: cst.CSTNode, target: Vals, state: State) -> None:
    """An in-place change of parameters by hand under `no_grad` (`p -= lr *
    p.grad`, `p.copy_(...)`, `p.add_(...)` with `p` from `m.parameters()`):
    like a step of those parameters. (`p.data.add_(...)` is not one: `.data`
    has a version counter of its own, so PyTorch does not notice.)"""
    if not state.no_grad:
        return  # on a parameter that requires grad, PyTorch refuses the in-place op itself
    leaves = [v for v in target if isinstance(v, AbstractNode) and v.leaf and v is not OPAQUE
              and v.tracked is Tracked.YES]
    if not leaves:
        return
    label = abbreviate(frame.program.module.code_for_node(site), 50)
    names = ", ".join(dict.fromkeys(leaf.name or "its parameters" for leaf in leaves))
    updated = owners(frame, (leaf.site for leaf in leaves))
    event = StepEvent(site, frame.loops, frame.context, label, names, updated)
    frame.recorder.step(event)
    for key in _stale_keys(frame, updated, frozenset(), state):
        state.stale[key] = event


def _stale_keys(frame: Frame, updated: frozenset, instances: frozenset, state: State) -> set[Key]:
    """The keys of the nodes reachable from a live binding, not stale yet,
    that saved a parameter of an owner in `updated` (and were not made by
    another instance of a stepped class than `instances`)."""
    if not updated:
        return set()
    live: list = []
    for env in (state.env, *frame.fallback, *frame.callers):  # a caller's bindings outlive a helper's step
        for vals in env.values():
            live.extend(frame.graph_values(vals, state))
    return {key for key, _ in walk(live)
            if key not in state.stale and saved_parameter(key[0], updated, frame.store) is not None
            and not _other_instance(frame, key[0], instances, state)}


def _other_instance(frame: Frame, node: AbstractNode, instances: frozenset, state: State) -> bool:
    """Was `node` made by the forward of another instance of a class whose
    stepped `instances` are known (`q2(s, a)` when `q1_opt` steps `q1`)? The
    call in this scope that ran the forward says which instance it was."""
    if not instances:
        return False
    depth = len(frame.context)
    if node.context[:depth] != frame.context or len(node.context) <= depth:
        return False
    call = node.context[depth]
    if type(call) is not cst_nodes.Call or dotted_name(call.func) is None:
        return False
    called = [v for v in frame.eval(call.func, state) if isinstance(v, ModuleRef) and v.user_class is not None]
    known = {v.user_class for v in instances}
    return bool(called) and all(v.user_class in known and v not in instances for v in called)


def saved_parameter(node: AbstractNode, updated: frozenset, store: StoreView) -> Optional[AbstractNode]:
    """The parameter leaf among `node`'s parents, of an owner in `updated`,
    that `node` saves for backward (None when it saves none of them)."""
    for leaf in node.parents:
        if not (isinstance(leaf, AbstractNode) and leaf.leaf and leaf is not OPAQUE and leaf.site in updated
                and leaf.tracked is not Tracked.NO):
            continue
        others = [p for p in node.parents if p is not leaf]
        if _saves(node, leaf, any(_is_tracked(p, store) for p in others)):
            return leaf
    return None


def _saves(node: AbstractNode, leaf: AbstractNode, input_tracked: bool) -> bool:
    """Does `node` save the parameter `leaf` (reference/torch/ measurements)?"""
    layer = leaf.op  # a module's parameter leaf is named by the module's class
    if layer in NEVER_SAVING_LAYERS:
        return False
    if layer in ALWAYS_SAVING_LAYERS:
        return True
    if layer == "Sequential" and type(leaf.site) is cst_nodes.Call:
        return _sequential_saves(leaf.site, input_tracked)
    if layer[:1].isupper() and layer != "Parameter":
        return input_tracked  # a Linear, or a module of unknown make: the weight serves the input's gradient
    if node.op in ALWAYS_SAVING_OPS:
        return True
    return node.op in OPERAND_SAVING_OPS and input_tracked


def _sequential_saves(site: cst.Call, input_tracked: bool) -> bool:
    """`nn.Sequential(nn.Linear(...), nn.ReLU(), nn.Linear(...))`: a layer
    after a parametric one has a tracked input, so it saves its weight (a
    layer of unknown make counts as a parametric one)."""
    tracked = input_tracked
    for arg in site.args:
        value = arg.value
        layer = ""
        if type(value) is cst_nodes.Call and not arg.star:
            layer = (dotted_name(value.func) or "").rsplit(".", 1)[-1]
        if layer in ALWAYS_SAVING_LAYERS:
            return True
        if layer in NEVER_SAVING_LAYERS:
            tracked = True
        elif layer not in MODULES or layer in PARAMETRIC_MODULES:
            if tracked:
                return True
            tracked = True
    return False


def _is_tracked(value: object, store: StoreView) -> bool:
    if isinstance(value, Carried):
        value = value.node
    return isinstance(value, AbstractNode) and value is not OPAQUE and store.is_tracked(value)


def stale_walks(walked: dict[Key, list[Key]], roots: Iterable[GraphValue], state: State,
                store: StoreView) -> list[tuple[Key, StepEvent]]:
    """The stale keys of what a backward from `roots` runs (`walked`: each key,
    in walk order, with its parents' keys), with the step that made each
    stale. Keys an earlier backward released are the reuse rules' (PyTorch
    reports the freed graph before the version), and so is what lies only
    behind them: the run fails at the freed node and never gets there (an
    earlier epoch's recurrent state behind the last batch's)."""
    reached: set[Key] = set()
    stack = [key_of(*steps(root, None)) for root in roots]
    while stack:
        key = stack.pop()
        if key in reached or key not in walked:
            continue
        reached.add(key)
        if key not in state.released:
            stack.extend(walked[key])
    hits = []
    for key in walked:
        step = state.stale.get(key)
        if step is not None and key in reached and key not in state.released and store.is_tracked(key[0]):
            hits.append((key, step))
    return hits


def module_name(node: AbstractNode, step: StepEvent, scope: tuple, store: StoreView) -> str:
    """Whose parameters `node` saved, as the user's scope (the chain of
    inlined calls `scope`) names it: the call through which a module's
    forward ran (`discriminator(...)`), else the parameter itself (`scale`
    in `x * scale`) or the layer called."""
    depth = len(scope)
    if node.context[:depth] == scope and len(node.context) > depth:
        call = node.context[depth]
        if type(call) is cst_nodes.Call:
            return dotted_name(call.func) or node.op
    leaf = saved_parameter(node, step.owners, store)
    if leaf is not None and not (leaf.op[:1].isupper() and leaf.op != "Parameter"):
        return leaf.name or store.display_name(leaf)
    return node.op[:-5] if node.op.endswith("(...)") else node.op
