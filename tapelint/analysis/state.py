"""The abstract state at one program point, and its lattice operations.

A state maps every name, attribute path (`self.h`) and container slot
(`<list@…>`) to the set of values it may hold, and records which graph
regions earlier backwards released (or retained). Branches merge by `join`
(union of values, union of released regions); at a loop's back edge,
`carry` turns this iteration's nodes and regions into "the previous
iteration's", which is what lets a walk tell a fresh graph from a reused one.

A state also holds the path's facts (`paths`: conditions on stable
expressions it has passed) and *guards*: for a value, or a released region,
that only some of the paths merged here have, the facts of those paths. A
branch whose facts contradict a guard drops what it guards — the value of
another path, the walk of another path's backward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Optional, TypeVar

from tapelint.analysis.model import (
    OPAQUE,
    AbstractNode,
    BackwardEvent,
    Carried,
    FunctionRef,
    ListRef,
    Loop,
    StepEvent,
    TupleVal,
    Value,
    container_key,
    spread,
)
from tapelint.analysis.paths import CONDITIONED_ROOTS, NO_FACTS, Facts, consistent, fact_keys, fact_roots, mentions

Vals = frozenset  # frozenset[Value]: what one binding may hold
EMPTY: Final[Vals] = frozenset()

# One runtime tensor: an abstract node plus its age — None for "this
# iteration's" (or a node outside every loop in play), or the loop whose
# previous iteration created it.
Key = tuple[AbstractNode, Optional[Loop]]
E = TypeVar("E")  # what a key is marked with: the backward that released it, the step that made it stale

# What a guard is on: ("env", name, value) — one value of one binding — or
# (region, key) — a key of `released`, `retained` or `kept`.
Slot = tuple
_REGIONS = ("released", "retained", "kept")


def older(node: AbstractNode, a: Optional[Loop], b: Optional[Loop]) -> Optional[Loop]:
    """Of two ages of `node`, the one meaning the earlier tensor: "the
    previous iteration of an outer loop" is older than "of an inner loop"."""
    if a is None or a not in node.loops:
        return b
    if b is None or b not in node.loops:
        return a
    return a if node.loops.index(a) <= node.loops.index(b) else b


@dataclass
class State:
    """The abstract state at one program point (mutable; branches copy)."""

    env: dict[str, Vals]
    released: dict[Key, BackwardEvent]
    retained: dict[Key, BackwardEvent]  # retaining walks the next backward may rely on (TL006)
    # Every retaining walk, never forgotten: a strict tape has no retain_graph,
    # so under strict these are released as well.
    kept: dict[Key, BackwardEvent] = field(default_factory=dict)
    no_grad: bool = False
    # Nodes whose saved parameters an optimizer step changed in place since
    # they were created (TL007: a walk reaching one fails), by that step.
    stale: dict[Key, StepEvent] = field(default_factory=dict)
    # The path ended here (`continue`, `break`, `return`, `raise`): nothing
    # after it runs, and a join takes the other side as it is.
    ended: bool = False
    facts: Facts = NO_FACTS  # the conditions on stable expressions this path passed
    guards: dict[Slot, Facts] = field(default_factory=dict)

    def copy(self) -> State:
        return State(dict(self.env), dict(self.released), dict(self.retained), dict(self.kept), self.no_grad,
                     dict(self.stale), self.ended, self.facts, dict(self.guards))

    def region(self, name: str) -> dict[Key, BackwardEvent]:
        return self.released if name == "released" else self.retained if name == "retained" else self.kept

    @staticmethod
    def join(a: State, b: State) -> State:
        if a.ended:
            return b.copy()
        if b.ended:
            return a.copy()
        env = dict(a.env)
        differ: list[str] = []  # the bindings not the same object on both sides
        for name, vals in b.env.items():
            mine = env.get(name)
            if mine is None:
                env[name] = vals
                differ.append(name)
            elif mine is not vals:  # the same binding on both sides (most of them) is kept as it is
                env[name] = mine | vals
                differ.append(name)
        released = dict(b.released)
        released.update(a.released)
        retained = dict(b.retained)
        retained.update(a.retained)
        kept = dict(b.kept)
        kept.update(a.kept)
        stale = dict(b.stale)
        stale.update(a.stale)
        joined = State(env, released, retained, kept, a.no_grad and b.no_grad, stale)
        if a.facts or b.facts or a.guards or b.guards:
            joined.facts = a.facts & b.facts
            differ.extend(name for name in a.env if name not in b.env)  # (no set of every key: a join per branch)
            joined.guards = _join_guards(a, b, joined, differ)
        return joined

    def same(self, other: State) -> bool:
        return (
            self.env == other.env
            and self.released.keys() == other.released.keys()
            and self.retained.keys() == other.retained.keys()
            and self.kept.keys() == other.kept.keys()
            and self.stale.keys() == other.stale.keys()
            and self.no_grad == other.no_grad
            and self.ended == other.ended
            and self.facts == other.facts
            and (self.guards == other.guards or _same_guards(self.guards, other.guards, self.facts))
        )

    # ------------------------------------------------------------ path facts

    def assume(self, facts: Facts) -> None:
        """This path passed a condition stating `facts`: add them, and drop
        what a guard says only paths contradicting them have. A path whose
        facts contradict each other is not taken (it ends)."""
        if not facts:
            return
        if not consistent(self.facts, facts):
            self.ended = True
            return
        self.facts = self.facts | facts
        keys = {fact.key for fact in facts}
        verdicts: dict[int, bool] = {}  # by guard: the guards of one join are a few shared sets
        for slot, guard in list(self.guards.items()):
            holds = verdicts.get(id(guard))
            if holds is None:
                holds = verdicts[id(guard)] = fact_keys(guard).isdisjoint(keys) or consistent(guard, facts)
            if holds:
                continue
            del self.guards[slot]
            if slot[0] == "env":
                _, name, value = slot
                vals = self.env.get(name)
                if vals is not None and value in vals:
                    self.env[name] = vals - {value}
            else:
                self.region(slot[0]).pop(slot[1], None)

    def rebound(self, key: str) -> None:
        """`key` was rebound: facts about it (or about its attributes) no
        longer hold, and the old binding's guards are gone with it."""
        # (a large file rebinds names hundreds of thousands of times: facts about
        # another name are told apart by the name their key starts with)
        root = key.partition(".")[0]
        if root not in CONDITIONED_ROOTS:  # no fact anywhere is about it: only its values' guards go
            if self.guards:
                for slot in [s for s in self.guards if s[0] == "env" and s[1] == key]:
                    del self.guards[slot]
            return
        if self.facts and root in fact_roots(self.facts) and any(mentions(f, key) for f in self.facts):
            self.facts = frozenset(f for f in self.facts if not mentions(f, key))
        if not self.guards:
            return
        weakened: dict[int, Facts] = {}  # by guard: the guards of one join are a few shared sets
        for slot, guard in list(self.guards.items()):
            if slot[0] == "env" and slot[1] == key:
                del self.guards[slot]
                continue
            weaker = weakened.get(id(guard))
            if weaker is None:
                weaker = weakened[id(guard)] = (
                    frozenset(f for f in guard if not mentions(f, key))
                    if root in fact_roots(guard) and any(mentions(f, key) for f in guard) else guard)
            if weaker is guard:
                continue
            if weaker:
                self.guards[slot] = weaker
            else:
                del self.guards[slot]


def _same_guards(a: dict[Slot, Facts], b: dict[Slot, Facts], facts: Facts) -> bool:
    """Do guards `a` and `b` drop the same values on paths that all have
    `facts`? A guard's fact that every path has contradicts no branch a path
    can take: only the rest of a guard tells (a loop head whose guards
    differ only there needs no further pass)."""
    if not facts:
        return False
    for slot in a.keys() | b.keys():
        ga, gb = a.get(slot, NO_FACTS), b.get(slot, NO_FACTS)
        if ga is not gb and ga - facts != gb - facts:
            return False
    return True


def _join_guards(a: State, b: State, joined: State, differ: Iterable[str]) -> dict[Slot, Facts]:
    """A value (or region) both sides have is guarded by what both guards
    say; one that only one side has, by that side's guard and facts.
    `differ`: the names not bound to the same object on both sides (a name
    bound to one object on both sides is only looked at when guarded)."""
    guards: dict[Slot, Facts] = {}
    guarded: set[str] = set()  # the names with a guarded value
    regions: set[str] = set()  # the regions with a guarded key
    for slots in (a.guards, b.guards):
        for slot in slots:
            if slot[0] == "env":
                guarded.add(slot[1])
            else:
                regions.add(slot[0])
    candidates = guarded.union(differ)
    both: dict[tuple[int, int], Facts] = {}  # the guards this join made, by what they came from (`_merge_guard`)
    for name, vals in joined.env.items():  # (in the bindings' order, which the guards keep)
        if name not in candidates:
            continue  # the same binding on both sides, unguarded: nothing to say
        va, vb = a.env.get(name) or EMPTY, b.env.get(name) or EMPTY
        if va == vb and name not in guarded:
            continue  # the same values on both sides, unguarded: nothing to say
        for value in vals:
            _merge_guard(a, b, guards, both, ("env", name, value), value in va, value in vb)
    for region in _REGIONS:
        ra, rb = a.region(region), b.region(region)
        if region not in regions and ra.keys() == rb.keys():
            continue
        for key in joined.region(region):
            _merge_guard(a, b, guards, both, (region, key), key in ra, key in rb)
    return guards


def _merge_guard(a: State, b: State, guards: dict[Slot, Facts], both: dict[tuple[int, int], Facts], slot: Slot,
                 in_a: bool, in_b: bool) -> None:
    """The guard of `slot` in the join of `a` and `b` (none: unguarded).
    `both`: the guards this join made, by the sides' guards they came from
    (a side's own guard and facts for a slot on one side): the guards of one
    join then share a few sets, which `assume` and `rebound` judge once per
    set."""
    ga, gb = a.guards.get(slot, NO_FACTS), b.guards.get(slot, NO_FACTS)
    if in_a and in_b:
        if ga is gb:
            guard = ga
        else:
            pair = (id(ga), id(gb))
            made = both.get(pair)
            if made is None:
                # (a side's facts are every path's there: its values are guarded by them too)
                made = both[pair] = (ga | a.facts) & (gb | b.facts)
            guard = made
    else:
        guard, facts = (ga, a.facts) if in_a else (gb, b.facts)
        if not guard or guard is facts:
            guard = facts
        elif facts:
            pair = (id(guard), -1 if in_a else -2)
            made = both.get(pair)
            if made is None:
                made = both[pair] = guard | facts
            guard = made
    if guard:
        guards[slot] = guard


def _user_name(key: str) -> Optional[str]:
    """How the user spells what a key binds: the key itself, or for an
    object's attribute (`<obj@…>.hidden`) what its methods write,
    `self.hidden`; None for a container's elements."""
    if not key.startswith("<"):
        return key
    if key.startswith("<obj@"):
        attribute = key.partition(">.")[2]
        return f"self.{attribute}" if attribute.isidentifier() else None
    return None


def carry(state: State, loop: Loop, stand_in: Callable[[Value, Loop], Value]) -> State:
    """The state at the head of `loop`'s next iteration, from the state at the
    end of this one: nodes created in the loop become their `Carried`
    stand-ins (`stand_in`, memoised by the node store), and so do the
    released regions, which are then "released by an earlier iteration"."""
    env: dict[str, Vals] = {}
    for name, vals in state.env.items():
        for v in vals:  # (a loop, not `any()`: every binding of every pass of every loop comes here)
            if v is not OPAQUE and isinstance(v, (AbstractNode, TupleVal)):
                break
        else:
            env[name] = vals  # nothing created in the loop: the same values next iteration
            continue
        carried = frozenset([stand_in(v, loop) for v in vals])
        shown = _user_name(name)
        if shown is not None:
            for value in spread(carried):  # `state` holding an LSTM's `(h, c)` carries both
                if isinstance(value, Carried) and value.name is None:
                    value.name = shown
        env[name] = vals if carried == vals else carried  # (the same binding where nothing changed)

    result = State(env, _aged(state.released, loop), _aged(state.retained, loop), _aged(state.kept, loop),
                   state.no_grad, _aged(state.stale, loop), state.ended, state.facts)
    if state.guards:
        result.guards = _carry_guards(state, loop, stand_in)
    return result


def _aged(keys: dict[Key, E], loop: Loop) -> dict[Key, E]:
    """This iteration's tensors (and those of loops nested in this one)
    become "the previous iteration's"; older ones stay older."""
    aged: dict[Key, E] = {}
    for (node, when), event in keys.items():
        if loop in node.loops:
            when = older(node, when, loop) if when is not None else loop
        aged.setdefault((node, when), event)
    return aged


def _carry_guards(state: State, loop: Loop, stand_in: Callable[[Value, Loop], Value]) -> dict[Slot, Facts]:
    """Guards follow their values (and regions) to the next iteration."""
    guards: dict[Slot, Facts] = {}
    for slot, guard in state.guards.items():
        if slot[0] == "env":
            guards[("env", slot[1], stand_in(slot[2], loop))] = guard
            continue
        node, when = slot[1]
        if loop in node.loops:
            when = older(node, when, loop) if when is not None else loop
        guards.setdefault((slot[0], (node, when)), guard)
    return guards


def without_garbage(state: State, loop: Loop, lists: Callable[[], Iterable[ListRef]]) -> State:
    """`state` at the entry of `loop`, without the elements of the containers
    created inside the loop that no binding of `state` reaches: they belong
    to an earlier run of the loop (an outer loop's previous iteration) whose
    container is garbage now. Kept, they would flow into this run's
    container of the same site at the loop head (`fast = params` then `for
    inner ...: fast = [w - lr * g for ...]`: the previous task's fast
    weights would seem to be this task's). `lists`: every container the
    store knows."""
    inside = {lst.key for lst in lists() if loop in lst.loops and lst.key in state.env}
    if not inside:
        return state
    dead = inside - _reached_lists(state)
    if not dead:
        return state
    pruned = state.copy()
    for key in [k for k in pruned.env if k.startswith("<list@") and container_key(k) in dead]:
        del pruned.env[key]  # the elements, and a mapping's slots
    return pruned


def _reached_lists(state: State) -> set[str]:
    """The keys of the containers some binding (a name, an attribute path, a
    closure) reaches, directly or through other containers and tuples."""
    reached: set[str] = set()
    seen: set[int] = set()  # closures and tuples met (a closure can hold its own function)
    stack: list[Value] = [v for name, vals in state.env.items() if not name.startswith("<list@") for v in vals]
    while stack:
        value = stack.pop()
        if isinstance(value, (TupleVal, FunctionRef)):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if isinstance(value, ListRef):
            if value.key not in reached:
                reached.add(value.key)
                stack.extend(state.env.get(value.key, EMPTY))
        elif isinstance(value, TupleVal):
            for item in value.items:
                stack.extend(item)
        elif isinstance(value, FunctionRef) and value.closure is not None:
            stack.extend(v for name, vals in value.closure.items() if not name.startswith("<list@") for v in vals)
    return reached
