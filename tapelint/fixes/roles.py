"""Which loss plays which part in a training step, read from the module's
text: the optimizers over modules' parameters (`opt_d = Adam(D.parameters())`)
and the optimizer stepped after each backward. A GAN's shared sample is
detached on the loss that updates the discriminator, never on the loss
that trains the module producing the sample (the generator then never
learns: no error, a dead model)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from tapelint.analysis.names import calls_in
from tapelint.fixes.context import SourceContext
from tapelint.fixes.edits import backward_statement, siblings


@dataclass(frozen=True)
class Optimizers:
    """Optimizer spelling (`opt_d`, `self.opt_D`) -> the modules whose
    `.parameters()` it was given (`D`, `self.D`)."""

    modules: dict[str, frozenset[str]]

    @staticmethod
    def of(ctx: SourceContext) -> Optimizers:
        found: dict[str, frozenset[str]] = {}
        for node in ctx.names.parents:
            if type(node) is cst.Assign and len(node.targets) == 1 and isinstance(node.value, cst.Call):
                over = _parameters_of(node.value, ctx)
                if over:
                    found[ctx.code_of(node.targets[0].target)] = over
        return Optimizers(found)


def _parameters_of(call: cst.Call, ctx: SourceContext) -> frozenset[str]:
    """The modules `X` of every `X.parameters()` in the call's arguments."""
    owners = set()
    for arg in call.args:
        for inner in calls_in(arg.value):
            func = inner.func
            if isinstance(func, cst.Attribute) and func.attr.value == "parameters" and not inner.args:
                owners.add(ctx.code_of(func.value))
    return frozenset(owners)


def stepped_after(ctx: SourceContext, backward: cst.Call) -> Optional[str]:
    """The optimizer whose `.step()` follows the backward statement in its
    block, before any other backward: the one this loss updates."""
    statement = backward_statement(ctx, backward)
    if statement is None:
        return None
    body, index = siblings(ctx, statement)
    for later in body[index + 1:]:
        for call in calls_in(later):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                return None
            if isinstance(func, cst.Attribute) and func.attr.value == "step" and not call.args:
                return ctx.code_of(func.value)
    return None


@dataclass(frozen=True)
class LossRole:
    """What one backward's loss updates: the modules of the optimizer
    stepped after it (None: not known)."""

    updates: Optional[frozenset[str]]

    def trains(self, module: str) -> Optional[bool]:
        return None if self.updates is None else module in self.updates


def loss_role(ctx: SourceContext, backward: cst.Call) -> LossRole:
    """What the loss of this backward updates (the optimizers of the module
    are read once per file: `SourceContext.optimizers`)."""
    optimizer = stepped_after(ctx, backward)
    modules = ctx.optimizers.modules
    return LossRole(modules[optimizer] if optimizer is not None and optimizer in modules else None)


def producer(ctx: SourceContext, definition: cst.CSTNode) -> Optional[str]:
    """The module that computes a value: `G` for `fake = G(z)`, `self.G` for `self.G(x)`."""
    if isinstance(definition, cst.Call) and isinstance(definition.func, (cst.Name, cst.Attribute)):
        return ctx.code_of(definition.func)
    return None
