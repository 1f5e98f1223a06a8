"""The abstract values of `docs/analysis.md`: nodes, loops, backward events.

An abstract node stands for the tensors created at one expression (its site)
in one loop context. Edges point from a node to its parents. A `Carried`
stand-in is the back edge of a loop: it leads to the same site's tensor from
the previous iteration. Walking through one tells apart "this iteration's
node" from "an earlier iteration's node" — the whole difference between a
fresh graph and a reused one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Final, Optional, Union

import libcst as cst

from tapelint.ops import Saves


class Tracked(str, Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"

    @staticmethod
    def union(values: list[Tracked]) -> Tracked:
        """Tracked if any is, else unknown if any is (not `join`: that is `str.join`)."""
        if any(v is Tracked.YES for v in values):
            return Tracked.YES
        if any(v is Tracked.UNKNOWN for v in values):
            return Tracked.UNKNOWN
        return Tracked.NO


class Retains(str, Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclass(frozen=True, eq=False)
class Loop:
    """A loop statement, or the implicit loop of a step function called once
    per training step (`node` is then the function definition). One object
    per loop and analysis (`NodeStore.loop` makes them), so identity is
    equality: every walk step tests a node's loops and hashes its key, and
    comparing by value cost most of a large file's analysis time."""

    node: cst.CSTNode
    implicit: bool = False
    label: str = ""  # "for", "while", "step method train_step"

    @property
    def step_function(self) -> str:
        """The name of the function an implicit loop calls once per step."""
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else ""


class Clock:
    """Ticks at each loop run and pass (`NodeStore.begin_run`, `begin_pass`),
    one clock for every thread's analyses: it never goes back."""

    def __init__(self) -> None:
        self.now = 0
        self._lock = threading.Lock()

    def tick(self) -> int:
        """The clock's next time."""
        with self._lock:
            self.now += 1
            return self.now


CLOCK: Final = Clock()


@dataclass(eq=False)
class AbstractNode:
    """Tensors created at one site in one loop context. Identity is the object."""

    site: cst.CSTNode
    loops: tuple[Loop, ...]
    tracked: Tracked
    leaf: bool
    saves: Saves
    op: str  # what created it, for messages: "exp", "self.encoder(...)", "*"
    # Its parents (`parents`; only the node store adds to them).
    edges: list[GraphValue] = field(default_factory=list)
    # Its parents by which of its loops were past their first iteration when
    # it was made (`run_loop` runs the first apart): a walk that knows which
    # iteration it runs in follows only those, so a product made in the loop
    # from a value bound before it and remade in it reaches that value in the
    # first iteration only. `parents` is their union (the only record of a
    # node made outside every loop).
    edges_when: dict[frozenset, list[GraphValue]] = field(default_factory=dict)
    name: Optional[str] = None  # the first name bound to it, for messages
    accumulator: bool = False  # created by `total += x` in a loop (TL003)
    context: tuple = ()  # the chain of inlined calls it was created under
    distribution: bool = False  # a `torch.distributions` object: its samples are data (`torch_api`)
    # What made it, for the fixes (`analysis.shapes`): the torch layers whose call it is
    # (`ModuleRef`s: their class, and where each was built with which `reduction`), and
    # whether it is a full reduction or a reducing loss call (one element).
    made_by: frozenset = frozenset()
    reduces_all: bool = False
    # Its place among the module's nodes by creation: where one of several
    # values must be named (what a total adds), the first made is, not the
    # first of a set, whose order follows object identities.
    made: int = 0
    # The unknown result of a call unpacked into several names (`loss, size,
    # logs = self.criterion(...)`): one node stands for every element, so a
    # backward of `loss` proves all of them tracked (TL003 asks which one).
    unpacked: bool = False
    # Functions of the project given to its `register_hook`: a backward that
    # reaches the tensor runs them (a hook that empties a cache).
    hooks: tuple = ()
    # When its parents were last read (`CLOCK`): a loop pass that read them
    # before they grew is not a fixed point (`NodeStore.grew`).
    read: int = -1

    @property
    def parents(self) -> list[GraphValue]:
        self.read = CLOCK.now
        return self.edges

    @property
    def parents_when(self) -> dict[frozenset, list[GraphValue]]:
        self.read = CLOCK.now
        return self.edges_when

    def __repr__(self) -> str:  # debugging aid for tests
        return f"<{self.op} {self.name or ''} {self.tracked.value}{' leaf' if self.leaf else ''}>"


@dataclass(eq=False)
class Carried:
    """Stand-in for `node` as it was in the previous iteration of `loop`: the
    back edge of the loop. Walking through it means "an earlier iteration"."""

    node: AbstractNode
    loop: Loop
    name: Optional[str] = None  # the binding that carries it, for messages

    @property
    def tracked(self) -> Tracked:
        return self.node.tracked

    def __repr__(self) -> str:
        return f"<carried {self.node!r} over {self.loop.label}>"


GraphValue = Union[AbstractNode, Carried]

# A value whose provenance is unknown (a function parameter, an unresolved
# name): possibly a tensor, possibly tracked. A leaf, so never itself reported.
OPAQUE: Final = AbstractNode(
    site=cst.Name("opaque"), loops=(), tracked=Tracked.UNKNOWN, leaf=True, saves=Saves.UNKNOWN, op="<opaque>"
)


# The values every set operation of the state hashes and compares write their
# `__eq__` and `__hash__` out: mypyc compiles these, where a dataclass's
# generated ones run as Python (`docs/performance.md`). Nodes and objects
# compare by identity, as they do in a dataclass's field tuple.


@dataclass(frozen=True, eq=False)
class ModuleRef:
    """An `nn.Module` instance: calling it records graph nodes."""

    class_name: str
    parametric: bool  # owns trainable parameters: output tracked whatever the input
    saves: Saves
    recurrent: bool = False
    frozen: bool = False  # `requires_grad_(False)` / parameters switched off
    user_class: Optional[cst.ClassDef] = field(default=None, repr=False)
    # Where it is constructed: which parameters an optimizer updates and
    # which a graph saved are told apart by it (TL007).
    site: Optional[cst.CSTNode] = field(default=None, repr=False)
    # An instance of a user class: where what its methods (and its users)
    # store on it after `__init__` lives (`self.hidden` that one `forward`
    # leaves and the next reads), as an object's attributes do.
    instance: Optional[ObjectRef] = field(default=None, repr=False)
    # An `nn.Sequential` holding modules of the project (stateful neurons):
    # what each of its arguments may be, in order. Calling it runs them one
    # after the other, each user module's `forward` on its own instance.
    layers: tuple[frozenset, ...] = field(default=(), repr=False)

    @property
    def owner(self) -> Optional[cst.CSTNode]:
        """What identifies this module's own parameters: a torch layer's
        construction site, or for an instance of a user class, the class (its
        layers are the ones its `__init__` builds, for every instance)."""
        return self.user_class if self.user_class is not None else self.site

    def __eq__(self, other: object) -> bool:
        if type(other) is not ModuleRef:
            return NotImplemented
        return (self.class_name == other.class_name and self.parametric == other.parametric
                and self.saves == other.saves and self.recurrent == other.recurrent and self.frozen == other.frozen
                and self.user_class is other.user_class and self.site is other.site and self.instance is other.instance
                and self.layers == other.layers)

    def __hash__(self) -> int:
        return hash((self.class_name, self.parametric, self.saves, self.recurrent, self.frozen, id(self.user_class),
                     id(self.site), id(self.instance), self.layers))


@dataclass(eq=False)
class FunctionRef:
    """A function of this module. `closure` is the environment it was defined
    in, for a nested function: its free names resolve there; `obj`, the
    object whose method defined it (its `self.*` are that object's, when
    it runs after the method returned: a tensor hook)."""

    node: cst.FunctionDef
    closure: Optional[dict] = None
    obj: Optional[ObjectRef] = None


@dataclass(frozen=True)
class ClassRef:
    node: cst.ClassDef
    is_module: bool
    parametric: bool


@dataclass(eq=False)
class ListRef:
    """A list or dict object created at `site`; its elements live in the
    environment under `ListRef.key`, so appends are visible to every alias.
    Of a mapping (`mapping`), the elements are its values: iterating it
    yields its keys, which hold nothing the analysis knows."""

    site: cst.CSTNode
    loops: tuple[Loop, ...]
    mapping: bool = False

    @property
    def key(self) -> str:
        return f"<list@{id(self)}>"


def container_key(key: str) -> str:
    """The container a state key belongs to: the key itself, or of a
    mapping's slot (`analysis.mappings`), its mapping's."""
    return key[:key.index(">") + 1] if key.startswith("<list@") else key


# Tuples nest at most this deep in the abstract state: a tuple rebuilt from
# itself in a loop (`key = (key, x)`) would otherwise grow a new, deeper value
# on every pass and the loop would never reach its fixed point.
MAX_TUPLE_DEPTH = 3


@dataclass(frozen=True)
class RecordClass:
    """A named-tuple class (`namedtuple("Entry", keys)`): calling it builds a
    tuple whose fields are read by name. `fields` is empty when the names are
    not literal: a field read is then any of its values."""

    fields: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class TupleVal:
    """A tuple whose positions are kept apart, so unpacking it is precise.
    Build one with `tuple_of`, which bounds the nesting. `record`: the
    named-tuple class that built it (`entry.log_pi_a`, `entry.__class__`)."""

    items: tuple[frozenset, ...]
    depth: int = 1  # (not compared: a function of `items`)
    record: Optional[RecordClass] = None

    def __eq__(self, other: object) -> bool:
        if type(other) is not TupleVal:
            return NotImplemented
        return self.items == other.items and self.record == other.record

    def __hash__(self) -> int:
        return hash((self.items, self.record))


def tuple_of(items: Iterable[frozenset], record: Optional[RecordClass] = None) -> TupleVal:
    """A tuple of these positions; nested deeper than MAX_TUPLE_DEPTH, its
    inner tuples are spread into their elements (positions lost, values kept)."""
    items = tuple(items)
    depth = 1 + max((v.depth for item in items for v in item if isinstance(v, TupleVal)), default=0)
    if depth <= MAX_TUPLE_DEPTH:
        return TupleVal(items, depth, record)
    return TupleVal(tuple(frozenset(spread(item)) for item in items), 1, record)


def spread(values: frozenset) -> Iterator:
    """The values, with each tuple among them replaced by its elements, at any depth."""
    for value in values:
        if isinstance(value, TupleVal):
            for item in value.items:
                yield from spread(item)
        else:
            yield value


@dataclass(frozen=True, eq=False)
class LibraryObject:
    """An instance of a library class (`GPTLMLoss()`, `ArgumentParser()`):
    calling it may build graph from what it is given (a loss object), its
    methods are not known to (`parser.parse_args()`)."""

    class_name: str

    def __eq__(self, other: object) -> bool:
        if type(other) is not LibraryObject:
            return NotImplemented
        return self.class_name == other.class_name

    def __hash__(self) -> int:
        return hash(self.class_name)


@dataclass(frozen=True)
class ModuleFactory:
    """A model factory read without calling it (`from_fn = cls.from_pretrained`):
    calling it later gives `module`, as the direct call would."""

    module: ModuleRef


@dataclass(eq=False)
class ObjectRef:
    """An instance of a project class that is not an `nn.Module` (a rollout
    buffer, an agent, a trainer; a user module's is its `ModuleRef.instance`),
    one per allocation site and placement. Its
    attributes live in the state under `ObjectRef.prefix`, like a container's
    elements, so what one method call stores on it the next call reads, and
    every alias sees it."""

    cls: cst.ClassDef = field(repr=False)
    site: cst.CSTNode = field(repr=False)
    # Its place among the module's objects by creation: calls on several
    # objects run in this order (`calls._each_alternative`), not in hash
    # order, so which walk their joined state says released a shared
    # tensor is the same in every process.
    order: int = 0

    @property
    def prefix(self) -> str:
        return f"<obj@{id(self)}>."


@dataclass(frozen=True)
class MethodRef:
    """A method of a project object read as a value (`hook = obj.on_step`,
    `getattr(cb, "on_batch_end")`): calling it runs the method on the object."""

    obj: ObjectRef
    name: str


@dataclass(frozen=True)
class PartialRef:
    """`functools.partial(f, a, k=b)`: calling it calls `f` with these arguments
    first (`args`: (keyword or None, values) per argument)."""

    func: frozenset
    args: tuple


class SelfRef:
    """The `self` of the method being analysed."""

    def __repr__(self) -> str:
        return "<self>"


SELF = SelfRef()


@dataclass(frozen=True)
class OptimizerRef:
    """An optimizer object: the roots of the parameters it updates (layer
    construction sites, user classes, tensor leaves' sites), expanded into
    owners when it steps (a user class's `__init__` may not have run yet)."""

    site: cst.Call
    roots: frozenset
    updates: str  # its parameter argument as written, for messages
    instances: frozenset = frozenset()  # user-class instances named in it (`q1.parameters()`)
    context: tuple = ()  # the chain of inlined calls it was built under (`make_optimizer(model)`)


@dataclass(frozen=True)
class OptimizerClass:
    """A torch optimizer class read as a value (`optimizer_class=optim.Adam`,
    a constructor's default): calling it builds an optimizer, as
    `optim.Adam(...)` does."""

    name: str  # canonical: `torch.optim.Adam`


Value = Union[AbstractNode, Carried, ModuleRef, FunctionRef, ClassRef, ListRef, TupleVal, SelfRef, LibraryObject,
              ObjectRef, MethodRef, PartialRef, ModuleFactory, OptimizerClass, OptimizerRef, RecordClass]


@dataclass(eq=False)
class BackwardEvent:
    """A call site that walks a graph."""

    call: cst.Call
    roots: list[GraphValue]
    retains: Retains
    loops: tuple[Loop, ...]
    order: int  # program order within its scope
    scope: cst.CSTNode
    api: str  # "loss.backward()", "torch.autograd.grad(...)"
    is_grad: bool = False  # torch.autograd.grad (does not touch .grad)
    creates_graph: bool = False
    context: tuple = ()  # the chain of inlined calls it runs under
    # The tensors `autograd.grad` differentiates with respect to: its walk
    # runs no further into their history (MAML's fast weights, made from the
    # previous step's, are not freed by the next step's `grad`).
    inputs: frozenset = frozenset()
    # The parents of every node it walks, by node id, copied for the fixes
    # before the analysis releases its graph (`fixes.reach.remember`).
    reach: Optional[dict[int, tuple[AbstractNode, ...]]] = field(default=None, repr=False)


@dataclass(frozen=True)
class StepEvent:
    """Where parameters change in place (`optimizer.step()`, or an update by
    hand such as `p -= lr * p.grad` under `no_grad`; TL007): the graphs created
    before it that saved one of those parameters are stale."""

    call: cst.CSTNode  # the step call, or the updating statement or call
    loops: tuple[Loop, ...]
    context: tuple  # the chain of inlined calls it runs under
    label: str  # what the user wrote: "optimizer_D.step()", "p -= lr * p.grad"
    updates: str  # what it updates, as written ("discriminator.parameters()")
    owners: frozenset = field(repr=False)  # the owners of the parameters it updates (`staleness.owners`)
