"""The module's definitions as the interpreter sees them: its imports, its
module-level functions, and its classes (which are `nn.Module`s, which own
parameters, what their instances hold after `__init__`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from tapelint import ops
from tapelint.analysis import torch_api
from tapelint.analysis.imports import ImportMap, dotted_name
from tapelint.analysis.state import Vals
from tapelint.analysis.syntax import walk_statements
from tapelint.settings import Settings


@dataclass
class ClassInfo:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    is_module: bool
    parametric: bool
    state: dict[str, Vals] = field(default_factory=dict)  # self.* after __init__ and setup methods


@dataclass
class Program:
    """One module's definitions, and the configured names that mean backward or tracked."""

    module: cst.Module
    imports: ImportMap
    functions: dict[str, cst.FunctionDef]
    classes: dict[str, ClassInfo]
    backward_names: frozenset[str]
    tracked_names: frozenset[str]

    @classmethod
    def of(cls, module: cst.Module, settings: Settings) -> "Program":
        program = cls(module, ImportMap.of(module), {}, {}, frozenset(settings.backward_functions),
                      frozenset(settings.tracked_functions))
        for stmt in module.body:
            if type(stmt) is cst.FunctionDef:
                program.functions[stmt.name.value] = stmt
            elif type(stmt) is cst.ClassDef:
                program.classes[stmt.name.value] = program._class_info(stmt)
        return program

    def _class_info(self, node: cst.ClassDef) -> ClassInfo:
        methods = {s.name.value: s for s in node.body.body if type(s) is cst.FunctionDef}
        is_module = any(self._is_module_base(base.value) for base in node.bases)
        parametric = is_module and self._creates_parameters(node)
        return ClassInfo(node, methods, is_module, parametric)

    def _is_module_base(self, expr: cst.BaseExpression) -> bool:
        name = dotted_name(expr)
        if name is None:
            return False
        if (self.imports.resolve(name) or "") in torch_api.MODULE_BASES:
            return True
        local = self.classes.get(name)
        return local is not None and local.is_module

    def _creates_parameters(self, node: cst.ClassDef) -> bool:
        """Does this module class own parameters: a parametric layer, a
        `Parameter` or a parametric module class of this file assigned in its
        body, or a parametric base class?"""
        parametric = set(ops.PARAMETRIC_MODULES) | {"Parameter"}
        parametric |= {name for name, info in self.classes.items() if info.parametric}
        for stmt in walk_statements(node.body.body):
            value = getattr(stmt, "value", None) if type(stmt) in (cst.Assign, cst.AnnAssign, cst.Expr) else None
            if type(value) is cst.Call:
                callee = dotted_name(value.func) or ""
                if callee.split(".")[-1] in parametric:
                    return True
        return any(
            (info := self.classes.get(dotted_name(base.value) or "")) is not None and info.parametric
            for base in node.bases
        )

    def is_no_grad_function(self, fn: cst.FunctionDef) -> bool:
        """Decorated with `@torch.no_grad()` / `@torch.inference_mode()`."""
        for decorator in fn.decorators:
            expr = decorator.decorator
            func = expr.func if type(expr) is cst.Call else expr
            name = dotted_name(func)
            if name is not None and self.imports.resolve(name) in torch_api.NO_GRAD_CONTEXTS:
                return True
        return False
