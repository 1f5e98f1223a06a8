"""Path facts a call starts with: a parameter bound to a literal at the call
(`run(False)`, or a literal default left unpassed) takes the same branch of
every test on it in the callee until it is rebound, as a stable name does
within one scope (`analysis/paths.py`): `x if eager else y` takes one arm.
"""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.imports import dotted_name
from tapelint.analysis.paths import NO_FACTS, Fact, Facts, literal_text


def literal_parameters(fn: cst.FunctionDef, call: cst.CSTNode, method: bool) -> Facts:
    """`param == literal` for each parameter of `fn` that `call` binds to a
    literal argument, or leaves at a literal default."""
    if type(call) is not cst.Call:
        return NO_FACTS
    params = list(fn.params.posonly_params) + list(fn.params.params)
    if method and params and not any(dotted_name(d.decorator) == "staticmethod" for d in fn.decorators):
        params = params[1:]
    bound: dict[str, cst.BaseExpression] = {}
    positional = True
    for i, arg in enumerate(call.args):
        if arg.star:
            return NO_FACTS  # `f(*xs)`, `f(**kw)`: which parameter gets what is not known
        if arg.keyword is not None:
            positional = False
            bound[arg.keyword.value] = arg.value
        elif positional and i < len(params):
            bound[params[i].name.value] = arg.value
    out = set()
    for param in params + list(fn.params.kwonly_params):
        expr = bound.get(param.name.value, param.default)
        literal = literal_text(expr) if expr is not None else None
        if literal is not None:
            out.add(Fact(param.name.value, literal, True))
    return frozenset(out)
