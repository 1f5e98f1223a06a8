"""Attributes read and written by name: `x.attr` on each kind of value,
`getattr`/`setattr` with a literal, a path-known or a computed name, and
named-tuple records (`namedtuple("Entry", keys)(*data).log_pi_a`).

A computed name (`getattr(self, k).append(v)` over a rollout buffer's keys)
is one of the object's attributes, the analysis does not know which: a read
is any of the object's data attributes (tensors, containers; never its
modules or methods, whose calls would run code the program may never run),
and a write goes to the object's `<any>` attribute, which every read of an
attribute no literal write bound then sees (`storage.reward[i]` after
`setattr(self, key, [])` for each key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, paths, torch_api
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    Carried,
    ClassRef,
    FunctionRef,
    ListRef,
    MethodRef,
    ModuleRef,
    ObjectRef,
    RecordClass,
    SelfRef,
    TupleVal,
    tuple_of,
)
from tapelint.analysis.state import EMPTY, State, Vals
from tapelint.analysis.syntax import plain_string
from tapelint.ops import Saves

if TYPE_CHECKING:
    from tapelint.analysis.interp.frame import Frame

# The attribute a write under a computed name goes to.
ANY_ATTRIBUTE = "<any>"
RECORD_FACTORIES = frozenset(("collections.namedtuple", "typing.NamedTuple"))
_DATA = (AbstractNode, Carried, ListRef, TupleVal)

Args = list  # list[tuple[Optional[str], Vals]]: (keyword or None, values) per argument


def attribute_values(frame: Frame, site: cst.CSTNode, base: Vals, attr: str, state: State) -> Vals:
    """`attr` of each value `base` may be (a name the state binds, `self.h`,
    was looked up before: this is what the values themselves hold)."""
    out: set = set()
    for value in base:
        if isinstance(value, (AbstractNode, Carried)):
            if value is OPAQUE:
                out.add(OPAQUE)
            elif attr in ops.UNTRACKING_ATTRIBUTES:
                continue
            elif attr in ("T", "mT", "H", "mH"):
                out.add(frame.store.node(frame, state, site, "t", [value], Saves.NOTHING))
            elif attr in torch_api.MODEL_OUTPUT_FIELDS:  # `outputs.loss`: a tensor of its own
                out.add(frame.store.node(frame, state, site, attr, [value], Saves.NOTHING))
            else:
                out.add(value)  # `.values`, `.logits`, `.loss`: the same graph
        elif isinstance(value, ModuleRef):
            out |= _module_attribute(frame, value, attr, state)
        elif isinstance(value, ObjectRef):
            out |= object_attribute(frame, site, value, attr, state)
        elif isinstance(value, SelfRef):
            out |= _unbound_attribute(frame.resolve(f"self.{ANY_ATTRIBUTE}", state))
        elif isinstance(value, TupleVal):
            out |= _record_field(value, attr)
        elif isinstance(value, (ListRef, FunctionRef, ClassRef)):
            continue
        else:
            out.add(OPAQUE)
    return frozenset(out)


def _module_attribute(frame: Frame, module: ModuleRef, attr: str, state: State) -> Vals:
    info = frame.user_class(module)
    instance = module.instance
    if instance is not None and (kept := state.env.get(instance.prefix + attr)) is not None:
        return kept  # stored on this instance after `__init__` (by `forward`, or by its user)
    if info is not None and f"self.{attr}" in info.state:
        return info.state[f"self.{attr}"]
    if instance is not None and (anywhere := state.env.get(instance.prefix + ANY_ATTRIBUTE)) is not None:
        return _unbound_attribute(anywhere)
    if attr in ops.MODULE_STATE_ATTRIBUTES:
        return EMPTY  # a buffer (`bn.running_var`) or the configuration: no parameter
    if (submodule := torch_submodule(module, attr)) is not None:
        return frozenset((submodule,))
    return frozenset((ModuleRef("submodule", module.parametric, Saves.UNKNOWN, frozen=module.frozen),))


def torch_submodule(module: ModuleRef, attribute: str) -> Optional[ModuleRef]:
    """The submodule `attribute` of a `torch.nn` layer (`nn.Transformer().encoder`),
    when that class builds one: its parameters are the layer's (they share its
    construction site, the owner an optimizer of `model.parameters()` updates)."""
    if module.user_class is not None:
        return None
    cls = torch_api.TORCH_SUBMODULES.get(module.class_name, {}).get(attribute)
    if cls is None:
        return None
    parametric = module.parametric and cls in ops.PARAMETRIC_MODULES
    return ModuleRef(cls, parametric, ops.module_saves(cls), frozen=module.frozen, site=module.site)


def object_attribute(frame: Frame, site: cst.CSTNode, obj: ObjectRef, attr: str, state: State) -> Vals:
    """An attribute of a project object; its `__class__` is its class and its
    `__dict__` a mapping of every attribute it holds (`type(b)(**b.__dict__)`)."""
    if attr == "__class__":
        info = frame.program.class_info(obj.cls)
        return frozenset((ClassRef(obj.cls, False, False),)) if info is not None and not info.is_module else EMPTY
    if attr == "__dict__":
        held = frozenset(v for key, vals in state.env.items() if key.startswith(obj.prefix) for v in vals)
        return frozenset((frame.new_list(site, held, state, mapping=True),))
    kept = state.env.get(obj.prefix + attr)
    if kept is not None:
        return kept
    info = frame.program.class_info(obj.cls)
    if info is not None and attr in info.methods:
        return frozenset((MethodRef(obj, attr),))  # called later, on the object
    return _unbound_attribute(state.env.get(obj.prefix + ANY_ATTRIBUTE))


def _unbound_attribute(anywhere: Optional[Vals]) -> Vals:
    """An attribute no literal write bound: what writes under a computed name
    left (`anywhere`, the object's `ANY_ATTRIBUTE`), or unknown."""
    return (anywhere or EMPTY) | {OPAQUE}


# ------------------------------------------------------- getattr / setattr

def attribute_name(call: cst.Call, state: State) -> Optional[str]:
    """The name `getattr`/`setattr` is given when it is a string literal, or a
    name the path knows equals one (a parameter bound to `"on_batch_end"`)."""
    if len(call.args) < 2 or call.args[1].keyword is not None or call.args[1].star:
        return None
    name = call.args[1].value
    if type(name) is cst_nodes.SimpleString:
        return plain_string(name)
    if type(name) is cst_nodes.Name:
        return paths.known_string(state.facts, name.value)
    return None


def getattr_call(frame: Frame, call: cst.Call, args: Args, state: State) -> Vals:
    """`getattr(obj, name[, default])`: the attribute, as `obj.name` reads it;
    under a computed name, any of the object's data attributes."""
    if not args or not _called_by_name(call, "getattr") or call.args[0].star:
        return frozenset((OPAQUE,))  # (`map(getattr, objects, names)`: nothing known)
    base = args[0][1]
    name = attribute_name(call, state)
    if name is None:
        out = set(dynamic_attributes(frame, base, state))
    else:
        base_key = dotted_name(call.args[0].value)
        bound = frame.resolve(f"{base_key}.{name}", state) if base_key is not None else None
        out = set(bound if bound is not None else attribute_values(frame, call, base, name, state))
    default = args[2][1] if len(args) > 2 else EMPTY
    return frozenset(out or (OPAQUE,)) | default


def dynamic_attributes(frame: Frame, base: Vals, state: State) -> Vals:
    """Any data attribute of the objects `base` may be (and unknown)."""
    out: set = {OPAQUE}
    for prefix in filter(None, map(_attribute_prefix, base)):
        # `self.*` may also be bound where this method was defined or by `__init__`
        envs = [state.env, *frame.fallback, *([frame.owner.state] if frame.owner is not None else [])] \
            if prefix == "self." else [state.env]
        for env in envs:
            out.update(v for key, vals in env.items() if key.startswith(prefix) for v in vals
                       if isinstance(v, _DATA))
    return frozenset(out)


def _attribute_prefix(value: object) -> Optional[str]:
    """Where the attributes of `value` live in the state, if it has any there."""
    if isinstance(value, SelfRef):
        return "self."
    if isinstance(value, ObjectRef):
        return value.prefix
    if isinstance(value, ModuleRef) and value.instance is not None:
        return value.instance.prefix
    return None


def setattr_call(frame: Frame, call: cst.Call, args: Args, state: State) -> None:
    """`setattr(obj, name, value)`: as `obj.name = value`; under a computed
    name, the object's `<any>` attribute gains `value`."""
    if len(args) < 3 or not _called_by_name(call, "setattr") or any(arg.star for arg in call.args[:3]):
        return
    base, vals = args[0][1], args[2][1]
    name = attribute_name(call, state)
    base_key = dotted_name(call.args[0].value)
    if name is not None and base_key is not None:
        frame.bind_attribute(base_key, name, vals, state)
        return
    attr = name if name is not None else ANY_ATTRIBUTE
    for prefix in filter(None, map(_attribute_prefix, base)):
        key = prefix + attr
        held = state.env.get(key) if prefix != "self." else frame.resolve(key, state)
        state.env[key] = vals if name is not None and len(base) == 1 else (held or EMPTY) | vals
        if state.facts or state.guards:
            state.rebound(key)


def _called_by_name(call: cst.CSTNode, name: str) -> bool:
    """`call` is `name(...)` itself, so its arguments are the builtin's."""
    return type(call) is cst_nodes.Call and type(call.func) is cst_nodes.Name and call.func.value == name


# ------------------------------------------------------------------ records

def record_class(args: Args, call: cst.Call) -> RecordClass:
    """`namedtuple("Entry", ["state", "action"])` / `namedtuple("Entry", "state action")`
    / `NamedTuple("Entry", [("state", Tensor), ...])`: a record class, its
    field names when they are literal."""
    names = call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None else None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("field_names", "fields"):
            names = arg.value
    return RecordClass(_literal_fields(names) if names is not None else ())


def _literal_fields(expr: cst.BaseExpression) -> tuple[str, ...]:
    if type(expr) is cst_nodes.SimpleString:
        text = plain_string(expr) or ""
        return tuple(text.replace(",", " ").split())
    if type(expr) not in (cst_nodes.List, cst_nodes.Tuple):
        return ()
    names = []
    for element in expr.elements:  # type: ignore[attr-defined]
        item = element.value
        if type(item) is cst_nodes.Tuple and item.elements:  # `("state", Tensor)` of `NamedTuple`
            item = item.elements[0].value
        name = plain_string(item) if type(item) is cst_nodes.SimpleString else None
        if name is None or type(element) is cst_nodes.StarredElement:
            return ()
        names.append(name)
    return tuple(names)


def make_record(record: RecordClass, call: cst.CSTNode, args: Args) -> TupleVal:
    """`Entry(a, b)`, `Entry(state=a, ...)`, `Entry(*values)`: a record of
    those fields. With a starred argument, positions are not known: each
    field may be any of the values passed."""
    positional = [vals for keyword, vals in args if keyword is None]
    keywords = {keyword: vals for keyword, vals in args if keyword is not None}
    starred = type(call) is not cst_nodes.Call or any(arg.star for arg in call.args)
    if starred or (not record.fields and keywords):
        spread = frozenset(v for vals in [*positional, *keywords.values()] for v in vals)
        return tuple_of([spread] * max(len(record.fields) or len(positional), 1), record)
    if not record.fields:
        return tuple_of(positional, record)
    return tuple_of([positional[i] if i < len(positional) else keywords.get(name, EMPTY)
                     for i, name in enumerate(record.fields)], record)


def _record_field(value: TupleVal, attr: str) -> Vals:
    """A field of a record (`entry.log_pi_a`); its `__class__`; nothing of a plain tuple."""
    record = value.record
    if record is None:
        return EMPTY
    if attr == "__class__":
        return frozenset((record,))
    if record.fields and attr not in record.fields:
        return EMPTY  # `_replace`, `_asdict`, `count`: methods
    index = record.fields.index(attr) if record.fields else len(value.items)
    if index < len(value.items):
        return value.items[index]
    return frozenset(v for item in value.items for v in item)  # names not known: any field
