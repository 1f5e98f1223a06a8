"""Path predicates: what the conditions a path has passed say about it.

A condition on a *stable* expression — a name or attribute chain (`flag`,
`args.with_prior_preservation`), `not` of one, or one compared with a
literal (`loss_type == "l2"`, `cache is None`) — takes the same branch every
time it is tested while nothing rebinds that expression. A path records
such conditions as facts; a branch whose condition contradicts the path's
facts is not taken (`if not F:` … `if F:`, `if x == "l2":` … `elif x ==
"huber":`). A fact is forgotten when its expression (or a prefix of it) is
rebound, so `for step in …: if step == 0:` says nothing about the next
iteration. `docs/analysis.md` ("Path predicates") describes how facts and
the guards built from them travel through joins and loop back edges.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final, Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.imports import dotted_name
from tapelint.analysis.syntax import string_text

# The literals a fact may compare with, and their truthiness.
_FALSY = frozenset(("None", "False", "0", "0.0", "''", '""'))


# The first names (`args` of `args.lr`) of every fact's key made in this
# process: rebinding a name not among them changes no fact, which `State.rebound`
# (called at every assignment) tells without looking at a path's facts.
# Only ever grows, so it never says "no fact" wrongly.
CONDITIONED_ROOTS: set[str] = set()


@dataclass(frozen=True)
class Fact:
    """`key` compared with `literal` (`literal` None: `key`'s truthiness) is `holds`."""

    key: str
    literal: Optional[str]
    holds: bool

    def __post_init__(self) -> None:
        CONDITIONED_ROOTS.add(self.key.partition(".")[0])

    def negated(self) -> Fact:
        return Fact(self.key, self.literal, not self.holds)


Facts = frozenset  # frozenset[Fact]
NO_FACTS: Final[Facts] = frozenset()


def contradicts(a: Fact, b: Fact) -> bool:
    """Can `a` and `b` not both hold on one path?"""
    if a.key != b.key:
        return False
    if a.literal == b.literal:
        return a.holds != b.holds
    if a.literal is not None and b.literal is not None:
        return a.holds and b.holds  # equal to two different literals
    literal, truth = (a, b) if a.literal is not None else (b, a)
    # `x == None` (or 0, "", False) and `x` truthy; `x == "l2"` and `x` falsy.
    return literal.holds and (literal.literal in _FALSY) == truth.holds


def consistent(facts: Iterable[Fact], more: Iterable[Fact]) -> bool:
    more = tuple(more)
    # (facts about different keys never contradict: tested here, not by a call per pair)
    return not any(a.key == b.key and contradicts(a, b) for a in facts for b in more)


def known_string(facts: Facts, key: str) -> Optional[str]:
    """The string literal the path's facts say `key` equals (`method_name ==
    "on_batch_end"`), if any."""
    for fact in facts:
        if fact.key == key and fact.holds and fact.literal is not None:
            return string_text(fact.literal)
    return None


def literal_text(expr: cst.BaseExpression) -> Optional[str]:
    """The source text of a literal a fact may compare with, else None."""
    if type(expr) is cst_nodes.Name and expr.value in ("None", "True", "False"):
        return expr.value
    if type(expr) in (cst_nodes.Integer, cst_nodes.Float, cst_nodes.SimpleString):
        return expr.value  # type: ignore[attr-defined]
    return None


def _atom(test: cst.BaseExpression, key_of: Callable[[str], Optional[str]]) -> Optional[Fact]:
    """The fact `test` states when it is true, if it is a condition on a stable expression."""
    if type(test) in (cst_nodes.Name, cst_nodes.Attribute):
        name = dotted_name(test)
        key = key_of(name) if name is not None and name not in ("True", "False", "None") else None
        return Fact(key, None, True) if key is not None else None
    if type(test) is not cst_nodes.Comparison or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    operator = type(target.operator)
    if operator not in (cst_nodes.Equal, cst_nodes.NotEqual, cst_nodes.Is, cst_nodes.IsNot):
        return None
    left, right = test.left, target.comparator
    literal = literal_text(right)
    if literal is None:
        left, right, literal = right, left, literal_text(left)
    if literal is None or type(left) not in (cst_nodes.Name, cst_nodes.Attribute):
        return None
    name = dotted_name(left)
    key = key_of(name) if name is not None else None
    if key is None:
        return None
    return Fact(key, literal, operator in (cst_nodes.Equal, cst_nodes.Is))


def assumed(test: cst.BaseExpression, truth: bool, key_of: Callable[[str], Optional[str]]) -> Facts:
    """The facts a path knows once `test` was `truth` on it: a conjunction's
    parts when it is true, a disjunction's negated parts when it is false."""
    if type(test) is cst_nodes.UnaryOperation and type(test.operator) is cst_nodes.Not:
        return assumed(test.expression, not truth, key_of)
    if type(test) is cst_nodes.BooleanOperation:
        if (type(test.operator) is cst_nodes.And) == truth:
            return assumed(test.left, truth, key_of) | assumed(test.right, truth, key_of)
        return NO_FACTS
    atom = _atom(test, key_of)
    if atom is None:
        return NO_FACTS
    return frozenset((atom if truth else atom.negated(),))


def decide(test: cst.BaseExpression, facts: Facts, key_of: Callable[[str], Optional[str]]) -> Optional[bool]:
    """What `test` is on a path with `facts`: True, False, or None (not known)."""
    if not facts:
        return None
    if type(test) is cst_nodes.UnaryOperation and type(test.operator) is cst_nodes.Not:
        inner = decide(test.expression, facts, key_of)
        return None if inner is None else not inner
    if type(test) is cst_nodes.BooleanOperation:
        left, right = decide(test.left, facts, key_of), decide(test.right, facts, key_of)
        if type(test.operator) is cst_nodes.And:
            return False if False in (left, right) else True if left is right is True else None
        return True if True in (left, right) else False if left is right is False else None
    atom = _atom(test, key_of)
    if atom is None:
        return None
    if atom in facts or any(contradicts(atom.negated(), fact) for fact in facts):
        return True
    if any(contradicts(atom, fact) for fact in facts):
        return False
    return None


_MAX_ROOTS = 4096
_ROOTS: dict[int, tuple[Facts, frozenset[str], frozenset[str]]] = {}


def fact_roots(facts: Facts) -> frozenset[str]:
    """The names the keys of `facts` start with (`args` of `args.lr`): only
    rebinding one of them can change what a fact is about (`mentions`).
    Memoised by identity: a path's facts are one set shared by the
    statements after its test, and equal sets of other paths would cost
    a comparison of every fact."""
    return _keys(facts)[1]


def fact_keys(facts: Facts) -> frozenset[str]:
    """The keys of `facts` (facts about other keys never contradict them), memoised as `fact_roots` is."""
    return _keys(facts)[2]


def _keys(facts: Facts) -> tuple[Facts, frozenset[str], frozenset[str]]:
    found = _ROOTS.get(id(facts))
    if found is not None and found[0] is facts:
        return found
    if len(_ROOTS) >= _MAX_ROOTS:
        _ROOTS.clear()
    keys = frozenset(fact.key for fact in facts)
    found = _ROOTS[id(facts)] = (facts, frozenset(key.partition(".")[0] for key in keys), keys)
    return found  # (the set is held, so its id stays its own)


def mentions(fact: Fact, key: str) -> bool:
    """Does rebinding `key` change what `fact` is about?"""
    return fact.key == key or fact.key.startswith(key + ".")
