"""Calls: configured backward and tracked functions, torch (`torch_calls`),
library model factories and wrappers, methods of modules, lists and
tensors, builtins, and the functions and classes of this module or of the
first-party modules it imports — interpreted at their call site (inlined),
so the nodes they create and the backwards they run sit in the caller's loops."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, mappings, staleness, torch_api
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.interp import call_facts
from tapelint.analysis.interp.attributes import (
    RECORD_FACTORIES,
    Args,
    getattr_call,
    make_record,
    record_class,
    setattr_call,
    torch_submodule,
)
from tapelint.analysis.interp.statements import note_accumulation
from tapelint.analysis.interp.torch_calls import backward, layer_result, tensor_method, torch_call
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    Carried,
    ClassRef,
    FunctionRef,
    LibraryObject,
    ListRef,
    MethodRef,
    ModuleFactory,
    ModuleRef,
    ObjectRef,
    OptimizerClass,
    PartialRef,
    RecordClass,
    SelfRef,
    Tracked,
    TupleVal,
    Value,
    container_key,
    tuple_of,
)
from tapelint.analysis.program import ClassInfo
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.submodules import submodules
from tapelint.analysis.syntax import per_analysis, plain_string, walk_nodes
from tapelint.analysis.torch_api import literal_bool
from tapelint.ops import Saves

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

INLINE_DEPTH = 3
DATACLASS_DECORATORS = frozenset(("dataclasses.dataclass",))
SPREAD = "**"  # the keyword an argument `**mapping` is passed under (what the mapping holds)



def eval_call(frame: Frame, call: cst.Call, state: State) -> Vals:
    args: Args = []
    for arg in call.args:
        vals = frame.eval(arg.value, state)
        if arg.star == "**" and (lst := mappings.sole(vals)) is not None:
            # `f(**step)` of a mapping with literal keys: one keyword argument per key
            slots, vals = mappings.contents(state, lst, frame.store.slot_names(lst))
            args.extend((name, held | vals) for name, held in slots.items())
            if not vals:
                continue
        elif arg.star:
            vals = frame.elements(vals, state, values=arg.star == "**")
        keyword = SPREAD if arg.star == "**" else arg.keyword.value if arg.keyword is not None else None
        args.append((keyword, vals))
    func = call.func
    raw = dotted_name(func)
    program = frame.program
    if raw is not None and _matches(raw, program.backward_names):
        roots = args[0][1] if args else EMPTY
        backward(frame, call, roots, state, f"{raw}(...)", positional_offset=None)
        return EMPTY
    if raw is not None and _matches(raw, program.tracked_names):
        parents = [p for _, v in args for p in frame.graph_values(v, state)]
        return frozenset((frame.store.node(frame, state, call, f"{raw}(...)", parents, Saves.UNKNOWN, Tracked.YES),))
    name = frame.canonical(func, raw)
    result: Vals
    if name == "functools.partial" and args and args[0][0] is None:
        result = frozenset((PartialRef(args[0][1], tuple(args[1:])),))  # called later, like the function
    elif name is not None and name in torch_api.MODULE_WRAPPERS:
        result = args[0][1] if args else EMPTY  # `torch.compile(model)`, `DDP(model)`: the module itself
    elif name is not None and name in torch_api.MODULE_FACTORIES:
        result = _library_module(args, name)
    elif name is not None and name in torch_api.MAPPING_CLASSES:
        result = frozenset((new_mapping(frame, call, args, state, factory=name.endswith("defaultdict")),))
    elif name is not None and name in RECORD_FACTORIES:
        result = frozenset((record_class(args, call),))
    elif name is not None and name in torch_api.CHAINING_CALLS:
        result = frozenset(v for _, vals in args for v in frame.elements(vals, state))
    elif name is not None and (name == "torch" or name.startswith("torch.")):
        result = torch_call(frame, call, name, args, state)
    elif type(func) is cst_nodes.Attribute and raw is not None and (bound := frame.resolve(raw, state)) is not None:
        result = call_values(frame, call, func, bound, args, state)
    elif type(func) is cst_nodes.Attribute and raw is not None and (lent := first_party(frame, raw)) is not None:
        result = call_values(frame, call, func, lent, args, state)
    elif type(func) is cst_nodes.Attribute and torch_api.builds_pretrained_module(raw or "", func.attr.value):
        result = pretrained(frame, func, state)
    elif type(func) is cst_nodes.Attribute and (parent := super_method(frame, func)) is not None:
        result = inline(frame, call, parent, args, state, owner=frame.owner)  # `super().__init__()`
    elif type(func) is cst_nodes.Attribute:
        receiver = frame.eval(func.value, state)
        result = method_call(frame, call, func, receiver, args, state)
    else:
        callee = frame.eval(func, state)
        result = call_values(frame, call, func, callee, args, state)
    if not result and name is not None and _names_a_class(name):
        # An object of a library class (`GPTLMLoss()`, `ReplayBuffer(n)`): something
        # that may be called on tensors later, not nothing.
        result = frozenset((LibraryObject(name.rsplit(".", 1)[-1]),))
    _call_function_arguments(frame, args, state)
    return result


def _names_a_class(name: str) -> bool:
    """`lib.GPTLMLoss`, `l2l.algorithms.MAML`: the last component is capitalised, as Python spells
    classes (and acronyms: a called all-capitals name is a class, hardly a constant)."""
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper()


def super_method(frame: Frame, func: cst.Attribute) -> Optional[cst.FunctionDef]:
    """`super().<name>` in a method of a project class: the method of that
    name its project base classes define (what `super()` runs on `self`)."""
    value = func.value
    if not (type(value) is cst_nodes.Call and type(value.func) is cst_nodes.Name and value.func.value == "super"
            and "super" not in frame.program.functions) or frame.owner is None:
        return None
    home = frame.program.home_of(frame.scope)
    defining = next((c for c in home.classes.values() if any(s is frame.scope for s in c.node.body.body)), None)
    if defining is None:
        return None
    return next((base.methods[func.attr.value] for base in home.base_classes(defining.node)
                 if func.attr.value in base.methods), None)


def first_party(frame: Frame, dotted: str) -> Optional[Vals]:
    """What a name that another module of the project defines is here: a
    reference to that module's function or class, interpreted over its tree."""
    found = frame.program.definition(dotted)
    if found is None:
        return None
    if isinstance(found.node, cst.FunctionDef):
        return frozenset((frame.store.function_ref(found.node, (), ()),))
    info = frame.program.class_info(found.node)
    if info is None:
        return None
    return frozenset((ClassRef(info.node, info.is_module, info.parametric),))


def _library_module(args: Args, name: str) -> Vals:
    """`get_peft_model(model, ...)`, `instantiate(cfg.model)`: the module passed
    in when there is one, else a module of the library with parameters."""
    passed = frozenset(v for _, vals in args[:1] for v in vals if isinstance(v, ModuleRef))
    return passed or frozenset((ModuleRef(name.rsplit(".", 1)[-1], True, Saves.TENSORS),))


def pretrained(frame: Frame, func: cst.Attribute, state: State) -> Vals:
    """`AutoModelForCausalLM.from_pretrained(...)`: a module with parameters
    (of the user's class, when the receiver is one)."""
    receiver = frame.eval(func.value, state)
    own = [v for v in receiver if isinstance(v, ClassRef) and v.is_module]
    if own:
        return frozenset(ModuleRef(c.node.name.value, c.parametric, Saves.TENSORS, user_class=c.node) for c in own)
    return frozenset((ModuleRef(dotted_name(func.value) or "pretrained", True, Saves.TENSORS),))


def _matches(raw: str, names: frozenset[str]) -> bool:
    return bool(names) and any(raw == n or raw.endswith("." + n) for n in names)


def _call_function_arguments(frame: Frame, args: Args, state: State) -> None:
    """A function passed as an argument (an optimizer closure) is called."""
    for _, vals in args:
        for value in vals:
            if isinstance(value, FunctionRef) and not value.node.params.params:
                inline(frame, value.node, value.node, [], state, owner=None, closure=value.closure)


def method_call(frame: Frame, call: cst.Call, func: cst.Attribute, receiver: Vals, args: Args,
                state: State) -> Vals:
    method = func.attr.value
    tensors = [v for v in receiver if isinstance(v, (AbstractNode, Carried))]
    known_tensors = [v for v in tensors if v is not OPAQUE]
    if method == "backward" and not _defines_backward(frame, receiver):
        owner_name = (dotted_name(func.value) or "").split(".")[-1]
        first = args[0][1] if args and args[0][0] is None else EMPTY
        named = owner_name.lstrip("_") in torch_api.BACKWARD_RUNNERS
        # (a runner made by a call the analysis cannot see into, `self._deepspeed_engine =
        # DistributedPlugin(...).shard_model(model)`, is that call's result, not a tensor)
        runner = not known_tensors or (named and all(_unseen_result(v) for v in known_tensors))
        if runner and first and (named or (_known_tensor(first) and not _wraps_backward(frame))):
            # `accelerator.backward(loss)`, `model_engine.backward(loss)`,
            # `self.strategy.backward(loss, model, optimizer)`: an object of a library
            # class that backwards the tensor it is given.
            backward(frame, call, first, state, f"{owner_name or 'runner'}.backward(...)", positional_offset=None)
        else:
            backward(frame, call, frozenset(tensors), state, "backward()", positional_offset=1)
        return EMPTY
    if method == "manual_backward" and args:
        backward(frame, call, args[0][1], state, "manual_backward(...)", positional_offset=None)
        return EMPTY
    if method in torch_api.BARRIER_METHODS and not known_tensors:
        state.retained.clear()
        if method == "step":
            staleness.on_step(frame, call, func, receiver, args, state)
    if method in torch_api.PREPARE_METHODS and not tensors and not any(
            isinstance(v, (ModuleRef, ListRef, SelfRef)) for v in receiver):
        # `accelerator.prepare(model, opt, loader)` returns what it is given, wrapped.
        if len(args) == 1:
            return args[0][1]
        return frozenset((tuple_of(vals for _, vals in args),))
    if method in torch_api.SEQUENCE_ADDERS and _kept_on_self(func.value) and all(
            v is OPAQUE or isinstance(v, LibraryObject) for v in receiver):
        # `self._metrics[mode][key].append(v)` into a container the analysis did not
        # see made (a `defaultdict`, a library's list): it is kept on the object, so it
        # outlives every call, whatever else it is.
        receiver = frozenset((frame.store.new_list(func.value, _Outside(frame.context)),))
    out: set = set()
    objects = sorted((v for v in receiver if isinstance(v, ObjectRef)), key=lambda obj: obj.order)
    if len(objects) > 1:
        out |= _each_alternative(frame, state, [
            lambda branch, obj=obj: object_method(frame, call, func, obj, method, args, branch) for obj in objects])
        receiver = frozenset(v for v in receiver if not isinstance(v, ObjectRef))
    owner = frame.owner
    for value in receiver:
        if isinstance(value, SelfRef) and owner is not None and method == "optimizers" \
                and "configure_optimizers" in owner.methods:
            # Lightning's `self.optimizers()`: what the module's own `configure_optimizers()`
            # built (whatever a base class's `optimizers` reads them back from).
            configure = owner.methods["configure_optimizers"]
            returned = inline(frame, call, configure, [], state, owner=owner)
            out |= staleness.configured_optimizers(returned, state, configure)
        elif isinstance(value, SelfRef) and owner is not None and method in owner.methods:
            out |= inline(frame, call, owner.methods[method], args, state, owner=owner)
        elif isinstance(value, SelfRef) and owner is not None and owner.is_module and method in _ADD_MODULE:
            _add_submodule(call, args, state)
        elif isinstance(value, ModuleRef):
            out |= module_method(frame, call, func, value, method, args, state)
        elif isinstance(value, ListRef):
            out |= list_method(frame, call, func, value, method, args, state)
        elif isinstance(value, ObjectRef):
            out |= object_method(frame, call, func, value, method, args, state)
        elif isinstance(value, ClassRef) and method == "apply" and (
                function := _autograd_function(frame, value.node)) is not None:
            out |= _apply_function(frame, call, function, args, state)
        elif isinstance(value, ClassRef):
            out.add(OPAQUE)
    if known_tensors:
        if method.endswith("_") and not method.endswith("__") and method != "requires_grad_":
            staleness.on_update(frame, call, frozenset(known_tensors), state)  # `p.copy_(...)` under no_grad
        out |= tensor_method(frame, call, func, known_tensors, method, args, state)
    elif OPAQUE in receiver or any(isinstance(v, LibraryObject) for v in receiver):
        if method == "scale" and args:
            out |= args[0][1]  # GradScaler.scale(loss): the same graph
        elif method not in torch_api.BARRIER_METHODS and method not in ops.UNTRACKING and OPAQUE in receiver:
            # (`mesh.size()`, `x.item()`: were the receiver a tensor, that result
            # would carry no graph, and a tensor is the only way it could)
            out |= unknown_call(frame, call, args, state, receiver_unknown=True)
    return frozenset(out)


def _autograd_function(frame: Frame, node: cst.ClassDef, depth: int = 0) -> Optional[ClassInfo]:
    """The class, when it is a custom `torch.autograd.Function` (directly or
    through a base class of the project), as its own module imports the base."""
    info = frame.program.class_info(node)
    if info is None or depth > INLINE_DEPTH:
        return None
    home = frame.program.home_of(node)
    for base in node.bases:
        name = dotted_name(base.value)
        if name is None:
            continue
        if (home.imports.resolve(name) or "") in torch_api.AUTOGRAD_FUNCTION_BASES:
            return info
        local = home.classes.get(name) or home.foreign_class(name)
        if local is not None and _autograd_function(frame, local.node, depth + 1) is not None:
            return info
    return None


def _apply_function(frame: Frame, call: cst.Call, function: ClassInfo, args: Args, state: State) -> Vals:
    """`Square.apply(w)`: one node whose parents are its tensor arguments; what
    it saves is what its `forward` hands `ctx.save_for_backward` (freed by the
    first backward through it, as every node's saved tensors are)."""
    parents = [p for _, v in args for p in frame.graph_values(v, state)]
    if not parents:
        return EMPTY
    saves = Saves.TENSORS if _saves_for_backward(function.methods.get("forward")) else Saves.NOTHING
    return frozenset((frame.store.node(frame, state, call, f"{function.node.name.value}.apply", parents, saves),))


def _saves_for_backward(forward: Optional[cst.FunctionDef]) -> bool:
    """Does `forward(ctx, ...)` call `ctx.save_for_backward(...)` anywhere in its body?"""
    if forward is None or not forward.params.params:
        return False
    ctx = forward.params.params[0].name.value
    wanted = f"{ctx}.{torch_api.SAVE_FOR_BACKWARD}"
    return any(type(node) is cst_nodes.Call and dotted_name(node.func) == wanted for node in walk_nodes(forward.body))


def _defines_backward(frame: Frame, receiver: Vals) -> bool:
    """Is the receiver an instance of a class of the project that defines
    `backward` (a wrapper analysed as the code it is, not as a walk)?"""
    for value in receiver:
        if isinstance(value, SelfRef) and frame.owner is not None and "backward" in frame.owner.methods:
            return True
        if isinstance(value, ModuleRef):
            info = frame.user_class(value)
            if info is not None and "backward" in info.methods:
                return True
        if isinstance(value, ObjectRef):
            info = frame.program.class_info(value.cls)
            if info is not None and "backward" in info.methods:
                return True
    return False


def _wraps_backward(frame: Frame) -> bool:
    """Is this the body of a method that is itself called `backward` (a
    wrapper handing its loss on: `self.precision_plugin.backward(loss)`)? It
    runs when its caller backwards, not once per step of its own."""
    return type(frame.scope) is cst_nodes.FunctionDef and frame.scope.name.value == "backward"


def _unseen_result(value: Value) -> bool:
    """The result of a call whose graph is unknown (not a tensor op, not a layer)."""
    node = value.node if isinstance(value, Carried) else value
    return isinstance(node, AbstractNode) and node.saves is Saves.UNKNOWN and not node.leaf


def _known_tensor(vals: Vals) -> bool:
    """A tensor the analysis knows that may carry a graph (not a gradient
    built by a factory: `out.backward(torch.ones_like(out))` of an unknown `out`)."""
    return any(isinstance(v, (AbstractNode, Carried)) and v is not OPAQUE and v.tracked is not Tracked.NO
               for v in vals)


@dataclass
class _Outside:
    """A placement outside every loop: a container that lives on an object
    (a `Placement`, whose members are plain attributes)."""

    context: tuple
    loops: tuple = ()


def _kept_on_self(expr: cst.BaseExpression) -> bool:
    """`self.x`, `self.x[k]`, `self.x[k][j]`: an attribute of the object, or an item of one."""
    while type(expr) is cst_nodes.Subscript:
        expr = expr.value
    return type(expr) is cst_nodes.Attribute and (dotted_name(expr) or "").startswith("self.")


def module_method(frame: Frame, call: cst.Call, func: cst.Attribute, module: ModuleRef, method: str, args: Args,
                  state: State) -> Vals:
    if method in torch_api.MODULE_IDENTITY_METHODS:
        return frozenset((module,))
    if method == "requires_grad_":
        flag = literal_bool(call.args[0].value) if call.args else True
        if flag is False:
            return frame.freeze(frame.target_key(func.value), frozenset((module,)), state)
        thawed = replace(module, frozen=False)
        key = frame.target_key(func.value)
        if key is not None:
            state.env[key] = frozenset((thawed,))
        return frozenset((thawed,))
    if method in torch_api.PARAMETER_METHODS:
        return frozenset((frame.store.parameter_leaf(module),))
    if method == "forward":
        return module_call(frame, call, func.value, module, args, state)
    if method in torch_api.SUBMODULE_METHODS and not args:
        # `for m in net.modules(): m.reset_mem()`: the modules it holds, itself first
        held = submodules(frame, module)
        mods = [module, *held] if method == "modules" else held
        return frozenset((frame.new_list(call, frozenset(mods), state),))
    if module.class_name in ops.MODULE_CONTAINERS and method in ("items", "values"):
        # `for name, head in self.heads.items()`: each entry stands for the
        # container, which owns what it holds (its keys are no tensors)
        entry = tuple_of((EMPTY, frozenset((module,)))) if method == "items" else module
        return frozenset((frame.new_list(call, frozenset((entry,)), state),))
    info = frame.user_class(module)
    if info is not None:
        if method in info.methods:
            return inline(frame, call, info.methods[method], args, state, owner=info, share_self=False,
                          obj=module.instance, receiver=module)
        if f"self.{method}" in info.state:  # a submodule: `model.body(x)`
            return call_values(frame, call, func, info.state[f"self.{method}"], args, state)
    elif (submodule := torch_submodule(module, method)) is not None:
        return module_call(frame, call, func, submodule, args, state)  # `transformer.encoder(src)`
    return EMPTY


def object_method(frame: Frame, call: cst.Call, func: cst.Attribute, obj: ObjectRef, method: str, args: Args,
                  state: State) -> Vals:
    """`buffer.add(s, v)`: the method of the object's class, run on that
    object's attributes; a callable kept on it (`self.loss_fn = nn.MSELoss()`)
    is called; an unknown method (of a library base class) gives nothing known."""
    info = frame.program.class_info(obj.cls)
    if info is not None and method in info.methods:
        return inline(frame, call, info.methods[method], args, state, owner=info, share_self=False, obj=obj)
    if info is not None and method == "__class__" and not info.is_module:  # `batch.__class__(**fields)`
        return frozenset((instantiate(frame, call, ClassRef(obj.cls, False, False), args, state),))
    kept = state.env.get(obj.prefix + method)
    if kept is not None:
        return call_values(frame, call, func, kept, args, state)
    return EMPTY


def _each_alternative(frame: Frame, state: State, calls: list) -> Vals:
    """Calls on one of several objects (`for acc in (Accelerator(2), Accelerator(2, scaler))`:
    `acc.backward(loss)`) are alternatives, not one after the other: each runs
    on a copy of the state, and `state` becomes their join."""
    out: set = set()
    joined: Optional[State] = None
    for run in calls:
        branch = state.copy()
        out |= run(branch)
        joined = branch if joined is None else State.join(joined, branch)
    if joined is not None:
        for item in fields(State):
            setattr(state, item.name, getattr(joined, item.name))
    return frozenset(out)


def instantiate(frame: Frame, call: cst.Call, cls: ClassRef, args: Args, state: State) -> ObjectRef:
    """`RolloutBuffer(steps, envs)`: a new object of a project class (one per
    site and placement), its `__init__` run on it with the call's arguments.
    What an earlier object of the same site held is gone."""
    obj = _fresh_object(frame, call, cls, state)
    info = frame.program.class_info(cls.node)
    if info is not None and "__init__" in info.methods:
        inline(frame, call, info.methods["__init__"], args, state, owner=info, share_self=False, obj=obj)
    elif info is not None:
        for field_name, vals in _dataclass_fields(frame, info.node, args):
            state.env[obj.prefix + field_name] = vals
    return obj


def new_module(frame: Frame, call: cst.CSTNode, cls: ClassRef, state: State) -> ModuleRef:
    """`Net()`: an instance of a user module. What `__init__` leaves is its
    class's (`ClassInfo.state`); what is stored on it later is its own, and
    an earlier instance of the same site held is gone."""
    instance = _fresh_object(frame, call, cls, state)
    saves = Saves.TENSORS if cls.parametric else Saves.UNKNOWN
    return ModuleRef(cls.node.name.value, cls.parametric, saves, user_class=cls.node, site=call, instance=instance)


def _fresh_object(frame: Frame, call: cst.CSTNode, cls: ClassRef, state: State) -> ObjectRef:
    """The object of `cls` made at `call` here (one per site and placement),
    emptied of what an earlier run of the same site stored on it."""
    obj = frame.store.new_object(cls.node, call, frame)
    for key in [k for k in state.env if k.startswith(obj.prefix)]:
        del state.env[key]
    return obj


def _dataclass_fields(frame: Frame, node: cst.ClassDef, args: Args) -> list[tuple[str, Vals]]:
    """What the `__init__` that `@dataclass` writes stores: each field (the
    annotated names of the class body, a base dataclass's first) gets the
    argument at its position or of its name, else what a `**mapping` holds;
    a field left to its default holds nothing known."""
    names = _field_names(frame, node, 0)
    positional = [vals for keyword, vals in args if keyword is None]
    keywords = {keyword: vals for keyword, vals in args if keyword is not None}
    spread = keywords.pop(SPREAD, EMPTY)
    out = []
    for index, name in enumerate(names):
        vals = positional[index] if index < len(positional) else keywords.get(name, spread)
        if vals:
            out.append((name, vals))
    return out


def _field_names(frame: Frame, node: cst.ClassDef, depth: int) -> list[str]:
    home = frame.program.home_of(node)
    decorators = [d.decorator.func if type(d.decorator) is cst_nodes.Call else d.decorator for d in node.decorators]
    record = any(home.imports.resolve(dotted_name(base.value) or "") == "typing.NamedTuple" for base in node.bases)
    if depth > INLINE_DEPTH or not record and not any(
            home.imports.resolve(dotted_name(d) or "") in DATACLASS_DECORATORS for d in decorators):
        return []
    names = [name for base in home.base_classes(node) for name in _field_names(frame, base.node, depth + 1)]
    for stmt in node.body.body:
        if type(stmt) is cst_nodes.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst_nodes.AnnAssign and type(small.target) is cst_nodes.Name and "ClassVar" not in (
                        dotted_name(small.annotation.annotation) or ""):
                    names.append(small.target.value)
    return names


def list_method(frame: Frame, call: cst.Call, func: cst.Attribute, lst: ListRef, method: str, args: Args,
                state: State) -> Vals:
    key = _literal_argument(call) if lst.mapping else None
    if method in torch_api.LIST_ADDERS:
        added: Vals = EMPTY
        for _, vals in args:
            if method == "update":
                added |= frame.elements(vals, state, values=True)
            else:
                added |= frame.elements(vals, state) if method == "extend" else vals
        found = mappings.read(state, lst, key) if method == "setdefault" else EMPTY
        if lst.mapping:
            mappings.add(state, lst, added)
        else:
            state.env[lst.key] = state.env.get(lst.key, EMPTY) | added
        note_accumulation(frame, call, func.value, [lst], added, state)
        return found | added if method == "setdefault" else EMPTY  # `d.setdefault(k, []).append(x)`
    if method == "clear":
        if lst.mapping:
            mappings.clear(state, lst, frame.store.slot_names(lst))
        else:
            state.env[lst.key] = EMPTY
        return EMPTY
    if method == "items":  # (key, value) pairs: the keys are no tensors the analysis knows
        pairs = frozenset((tuple_of((EMPTY, state.env.get(lst.key, EMPTY))),))
        return frozenset((frame.new_list(call, pairs, state),))
    if method in ("get", "pop") and lst.mapping:  # `d.get("loss", 0)`: that key's value, or the default
        found = mappings.read(state, lst, key) | frozenset(v for _, vals in args[1:] for v in vals)
        if method == "pop":
            mappings.remove(state, lst, key, True, frame.store.slot_names(lst))
        return found
    if method in torch_api.LIST_GETTERS:
        return state.env.get(lst.key, EMPTY) if method != "copy" else frozenset((lst,))
    return EMPTY


def _literal_argument(call: cst.Call) -> Optional[str]:
    """`"loss"` of `d.get("loss")`: a first argument that is a plain string literal."""
    first = call.args[0] if call.args else None
    if first is None or first.keyword is not None or first.star or type(first.value) is not cst_nodes.SimpleString:
        return None
    return plain_string(first.value)


def call_values(frame: Frame, call: cst.Call, func: cst.BaseExpression, callee: Vals, args: Args,
                state: State) -> Vals:
    """Call whatever `callee` may be: a function, a class, a module, a tensor, unknown."""
    out: set = set()
    if type(func) is cst_nodes.Name and func.value in torch_api.BUILTIN_NAMES and func.value not in state.env:
        return builtin_call(frame, call, func.value, args, state)
    # A module frozen on some path (`if not requires_grad: for p in self.parameters(): ...`):
    # its frozen version stands for it, so its output is tracked only through its inputs.
    maybe_frozen = {v.class_name for v in callee if isinstance(v, ModuleRef) and v.frozen}
    for value in callee:
        if isinstance(value, ModuleRef) and not value.frozen and value.class_name in maybe_frozen:
            continue
        if isinstance(value, FunctionRef):
            out |= inline(frame, call, value.node, args, state, owner=None, closure=value.closure)
        elif isinstance(value, ClassRef):
            if value.is_module:
                out.add(new_module(frame, call, value, state))
            elif type(call) is cst_nodes.Call:
                out.add(instantiate(frame, call, value, args, state))
        elif isinstance(value, PartialRef):
            bound = [a for a in value.args if a[0] is None] + [a for a in args if a[0] is None]
            keywords = {a[0]: a for a in value.args if a[0] is not None}
            keywords.update({a[0]: a for a in args if a[0] is not None})
            out |= call_values(frame, call, func, value.func, bound + list(keywords.values()), state)
        elif isinstance(value, ObjectRef):
            info = frame.program.class_info(value.cls)
            if info is not None and "__call__" in info.methods:
                out |= inline(frame, call, info.methods["__call__"], args, state, owner=info, share_self=False,
                              obj=value)
            else:
                out |= unknown_call(frame, call, args, state, receiver_unknown=True)
        elif isinstance(value, ModuleRef):
            out |= module_call(frame, call, func, value, args, state)
        elif isinstance(value, MethodRef) and (info := frame.program.class_info(value.obj.cls)) is not None:
            out |= inline(frame, call, info.methods[value.name], args, state, owner=info, share_self=False,
                          obj=value.obj)
        elif isinstance(value, SelfRef) and (method := _self_call_method(frame)) is not None:
            out |= inline(frame, call, method, args, state, owner=frame.owner)  # `self(x)` in a method
        elif isinstance(value, ModuleFactory):
            out.add(value.module)
        elif isinstance(value, RecordClass):
            out.add(make_record(value, call, args))
        elif isinstance(value, OptimizerClass):
            out |= staleness.optimizer(frame, call, args, state)  # `optimizer_class(model.parameters())`
        elif value is OPAQUE or isinstance(value, (AbstractNode, Carried, LibraryObject)):
            out |= unknown_call(frame, call, args, state, receiver_unknown=True)
    return frozenset(out)


_ADD_MODULE = frozenset({"add_module", "register_module"})


def _add_submodule(call: cst.Call, args: Args, state: State) -> None:
    """`self.add_module("disc", Discriminator())` in a module: `self.disc`,
    as if assigned (a name that is not a plain string literal: nothing known)."""
    name = call.args[0].value if call.args and call.args[0].keyword is None else None
    text = plain_string(name) if type(name) is cst_nodes.SimpleString else None
    if text is not None and text.isidentifier() and len(args) > 1:
        state.env[f"self.{text}"] = args[1][1]


def _self_call_method(frame: Frame) -> Optional[cst.FunctionDef]:
    """What `self(x)` runs in a method: the class's `forward` for a module,
    its `__call__` otherwise (None when the class defines neither)."""
    owner = frame.owner
    if owner is None:
        return None
    return owner.methods.get("forward" if owner.is_module else "__call__")


def new_mapping(frame: Frame, call: cst.Call, args: Args, state: State, factory: bool) -> ListRef:
    """`dict(...)`, `OrderedDict(...)`, `defaultdict(factory, ...)`: a new
    container holding the values of the mapping (or of the `(key, value)`
    pairs) it is given, and of its keyword arguments; a later `d[k] = v`
    adds to it, as to a `{}`."""
    rest: set = set()
    slots: dict[str, Vals] = {}
    positional = [vals for keyword, vals in args if keyword is None][1 if factory else 0:][:1]
    for vals in positional:
        if (copied := mappings.sole(vals)) is not None:  # a copy: its slots are this one's
            slots, held = mappings.contents(state, copied, frame.store.slot_names(copied))
            rest |= held
            continue
        for source in vals:
            if not isinstance(source, ListRef):
                rest.add(source)  # a mapping the analysis does not hold: what it is
            else:
                for element in state.env.get(source.key, EMPTY):
                    pair = not source.mapping and isinstance(element, TupleVal) and len(element.items) == 2
                    rest |= element.items[1] if pair else {element}
    for keyword, vals in args:
        if keyword == SPREAD:
            rest |= vals
        elif keyword is not None:
            slots[keyword] = vals
    return frame.new_list(call, frozenset(rest), state, mapping=True, slots=slots)


def builtin_call(frame: Frame, call: cst.Call, name: str, args: Args, state: State) -> Vals:
    store = frame.store
    if name == "dict":
        return frozenset((new_mapping(frame, call, args, state, factory=False),))
    if name == "sum" and args:
        parents = frame.graph_values(frame.elements(args[0][1], state), state)
        if not parents:
            return EMPTY
        return frozenset((store.node(frame, state, call, "sum", parents, Saves.NOTHING),))
    if name in ("max", "min", "abs", "pow") and args:
        parents = [p for _, v in args for p in frame.graph_values(v, state)]
        if parents:
            return frozenset((store.node(frame, state, call, name, parents, Saves.TENSORS),))
        return EMPTY
    if name in ("zip", "enumerate") and args:
        # iterating yields tuples: keep each position apart for unpacking targets
        columns = [frame.elements(vals, state) for keyword, vals in args if keyword is None]
        if name == "enumerate":
            columns = [EMPTY, columns[0]] if columns else [EMPTY]
        return frozenset((frame.new_list(call, frozenset((tuple_of(columns),)), state),))
    if name == "next" and args:  # an element of the iterator (or the default)
        return frame.elements(args[0][1], state) | frozenset(v for _, vals in args[1:] for v in vals)
    if name == "map" and len(args) > 1 and (mapped := _mapped(frame, call, args, state)) is not None:
        return frozenset((frame.new_list(call, mapped, state),))
    if name in torch_api.PASS_THROUGH_BUILTINS:
        out: set = set()
        for _, vals in args:
            lists = [v for v in vals if isinstance(v, ListRef)]
            if lists and name in ("list", "sorted", "reversed"):
                out |= frozenset((frame.new_list(call, frame.elements(vals, state), state),))
            else:
                out |= vals
        return frozenset(out)
    if name == "getattr":
        return getattr_call(frame, call, args, state)
    if name == "setattr":
        setattr_call(frame, call, args, state)
    return EMPTY


def _mapped(frame: Frame, call: cst.Call, args: Args, state: State) -> Optional[Vals]:
    """What `map(f, xs, ...)` yields when the analysis can run `f` (a lambda,
    a function or class of the project, a module, a builtin such as `float`):
    `f` called on the elements of the iterables. None for a function it
    cannot run, whose results are then taken as what it was given."""
    if call.args[0].star:
        return None
    func = call.args[0].value
    callee = args[0][1]
    builtin = type(func) is cst_nodes.Name and func.value in torch_api.BUILTIN_NAMES and func.value not in state.env
    if not builtin and not any(isinstance(v, _RUNNABLE) for v in callee):
        return None
    elements = [(None, frame.elements(vals, state)) for _, vals in args[1:]]
    return call_values(frame, call, func, callee, elements, state)


_RUNNABLE = (FunctionRef, PartialRef, ClassRef, ModuleRef, MethodRef, ObjectRef, RecordClass)


def module_call(frame: Frame, call: cst.Call, func: cst.BaseExpression, module: ModuleRef, args: Args,
                state: State) -> Vals:
    """`module(x)`: a user module runs its `forward`; a torch layer is one
    node; a Sequential of user modules runs each of them in turn."""
    if module.layers and not module.frozen:
        vals = args[0][1] if args else EMPTY
        for layer in module.layers:
            vals = call_values(frame, call, func, layer, [(None, vals)], state)
        return vals
    info = frame.user_class(module)
    if info is not None and "forward" in info.methods and not module.frozen:
        result = inline(frame, call, info.methods["forward"], args, state, owner=info, share_self=False,
                        obj=module.instance, receiver=module)
        if result:
            return result
    parents = [p for _, v in args for p in frame.graph_values(v, state)]
    tracked = None
    if module.parametric and not module.frozen and not (info is not None and _freezes_itself(info)):
        tracked = Tracked.YES
        parents.append(frame.store.parameter_leaf(module))
    label = f"{dotted_name(func) or module.class_name}(...)"
    node = frame.store.node(frame, state, call, label, parents, module.saves, tracked)
    return frozenset((layer_result(module, node),))


def _freezes_itself(info: ClassInfo) -> bool:
    """Does `__init__` switch the parameters of its submodules off (on some path)?"""
    return any(isinstance(v, ModuleRef) and v.frozen for vals in info.state.values() for v in vals)


def unknown_call(frame: Frame, call: cst.Call, args: Args, state: State, receiver_unknown: bool) -> Vals:
    parents = [p for _, v in args for p in frame.graph_values(v, state)]
    if receiver_unknown:
        parents.append(OPAQUE)
    if not parents:
        return EMPTY
    label = f"{dotted_name(call.func) or 'call'}(...)"
    return frozenset((frame.store.node(frame, state, call, label, parents, Saves.UNKNOWN),))


def inline(frame: Frame, call: cst.CSTNode, fn: cst.FunctionDef, args: Args, state: State,
           owner: Optional[ClassInfo], closure: Optional[dict] = None, share_self: bool = True,
           obj: Optional[ObjectRef] = None, receiver: Optional[Value] = None) -> Vals:
    """Interpret a call of a function of the project at its call site, so
    the nodes it creates and the backwards it runs sit in the caller's
    loops (a training step called once per iteration). A method of an
    object (`obj`) sees that object's attributes as `self.*`, and what it
    leaves there is the object's afterwards; its `return self` is
    `receiver` (the module whose instance `obj` is; by default `obj`). A
    generator's call is the container of what it yields (`for batch in
    buffer.minibatches(2)`)."""
    own_self = share_self and owner is not None
    too_deep = frame.depth >= INLINE_DEPTH and not _makes_no_call(fn)
    if too_deep or fn in frame.context or _left_to_subclasses(fn) or not frame.recorder.enter_call(
            fn, (call, frame.context), own_self):
        # A function of the project we will not look into (recursion, depth, an
        # abstract method): its result may well be detached (`repackage_hidden`
        # calls itself on each element of a tuple), so it is unknown, and no walk
        # goes through it to what it was given.
        if type(call) is not cst_nodes.Call:
            return EMPTY
        return frozenset((frame.store.node(frame, state, call, f"{fn.name.value}(...)", (), Saves.UNKNOWN,
                                           Tracked.UNKNOWN, leaf=True),))
    nested = type(frame.scope) is cst_nodes.FunctionDef and _encloses(frame.scope, fn)
    # A function defined in the method that calls it (an optimizer's closure)
    # reads and writes that method's `self.*`.
    share_self = own_self or (share_self and nested and owner is None and obj is None and frame.owner is not None)
    home = frame.program.home_of(fn)
    if home is frame.program:
        fallback = ((state.env,) if frame.is_module or nested else ()) + frame.fallback
    else:
        fallback = ()  # another module's function sees its own module, not the caller's names
    if closure is not None and closure is not state.env:
        fallback = (closure,) + fallback
    callee_owner = owner if owner is not None else (frame.owner if nested else None)
    callee = frame.callee(fn, call, callee_owner, fallback, state)
    callee.obj = obj
    inner = State({}, state.released, state.retained, state.kept,
                  state.no_grad or home.is_no_grad_function(fn), state.stale)
    own = obj.prefix if obj is not None else None
    inner.env.update(_entry_env(state.env, frame.store.lists_within(callee.context), own, share_self))
    callee.bind_parameters(fn, inner, method=owner is not None, args=args)
    edge = call_facts.boundary(own, share_self, owner)
    call_facts.into_call(state, inner, edge)
    inner.assume(call_facts.literal_parameters(fn, call, method=owner is not None))
    end = callee.finish(callee.exec_block(fn.body.body, inner))
    written = []
    for key, vals in end.env.items():
        # (keys are told apart by their first character: this runs for every key at every call)
        if key[0] == "s" and key.startswith("self."):
            if own:
                key = own + key[len("self."):]
            elif not share_self and key not in callee.globals:
                continue
        elif key[0] != "<" and key not in callee.globals:
            continue
        if state.env.get(key) is vals:
            continue  # left as the call found it: not rebound (its guards stay)
        state.env[key] = vals
        written.append(key)
        if (state.facts or state.guards) and not edge.is_stable(key):
            state.rebound(key)  # what the call set on `self` is not what a test saw before it
    call_facts.out_of_call(end, state, edge, written)
    state.released.update(end.released)
    state.retained.update(end.retained)
    state.kept.update(end.kept)
    state.stale.update(end.stale)
    if callee.yields:
        return frozenset((frame.new_list(call, frozenset(v for vals in callee.yields for v in vals), state),))
    result: set = set()
    for vals in callee.returns:
        result |= vals
    if obj is not None and any(isinstance(v, SelfRef) for v in result):
        me = receiver if receiver is not None else obj
        result = {me if isinstance(v, SelfRef) else v for v in result}  # `return self`: the object
    return frozenset(result)


def _entry_env(env: dict[str, Vals], fresh: Collection[str], own: Optional[str], share_self: bool) -> dict[str, Vals]:
    """What a callee starts from of its caller's state: the containers (but
    those its own list literals make anew, `fresh`), the other objects'
    attributes, `self.*` when it shares the caller's `self`, and the object
    it runs on (`own`) as its `self.*`. Keys are told apart by their first
    character: this runs for every key at every call."""
    entry: dict[str, Vals] = {}
    its_own: dict[str, Vals] = {}
    for key, vals in env.items():
        first = key[0]
        if first == "<":
            if key[1] == "l":
                if container_key(key) not in fresh:
                    entry[key] = vals
            elif own and key.startswith(own):
                its_own["self." + key[len(own):]] = vals
            else:
                entry[key] = vals
        elif share_self and first == "s" and key.startswith("self."):
            entry[key] = vals
    entry.update(its_own)
    return entry


_ABSTRACT_DECORATORS = frozenset(("abstractmethod", "abc.abstractmethod"))


@per_analysis
def _left_to_subclasses(fn: cst.FunctionDef) -> bool:
    """An abstract method (`@abstractmethod`, or a body of only a docstring,
    `...` and `raise NotImplementedError`): a subclass's override runs, so
    its result is unknown, not this body's `None`. (Taken for nothing, a base
    trainer's `self.compute_loss(batch) * self.scale` made `self.scale` the
    loss's only origin, proven tracked by the backward.)"""
    if any(dotted_name(d.decorator) in _ABSTRACT_DECORATORS for d in fn.decorators):
        return True
    if isinstance(fn.body, cst.SimpleStatementSuite):  # `def loss(self, batch): ...`
        statements: list[cst.CSTNode] = list(fn.body.body)
    else:
        statements = [small for line in fn.body.body
                      for small in (line.body if isinstance(line, cst.SimpleStatementLine) else (line,))]
    stubs = [small for small in statements if _is_stub_statement(small)]
    docstrings = [small for small in statements if type(small) is cst_nodes.Expr
                  and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))]
    return bool(stubs) and len(stubs) + len(docstrings) == len(statements)


def _is_stub_statement(small: cst.CSTNode) -> bool:
    """`...` or `raise NotImplementedError` / `raise NotImplementedError(...)`."""
    if type(small) is cst_nodes.Expr:
        return type(small.value) is cst_nodes.Ellipsis
    if type(small) is cst_nodes.Raise and small.exc is not None:
        exc = small.exc.func if type(small.exc) is cst_nodes.Call else small.exc
        return dotted_name(exc) == "NotImplementedError"
    return False


@per_analysis
def _makes_no_call(fn: cst.FunctionDef) -> bool:
    """A body without a call (`def push(self, xs): self.history += xs`) goes no
    deeper: the depth bound, which stops chains of calls from multiplying, need
    not stop it, and what it stores is often exactly what the caller's loop reads."""
    return not any(type(node) is cst_nodes.Call for node in walk_nodes(fn.body))


def _encloses(outer: cst.FunctionDef, inner: cst.FunctionDef) -> bool:
    return any(stmt is inner for stmt in outer.body.body)
