"""The module's definitions as the interpreter sees them: its imports, its
module-level functions, and its classes (which are `nn.Module`s, which own
parameters, what their instances hold after `__init__`) — and, through the
project (`analysis.project`), the definitions its first-party imports lend:
one `Program` per module an analysis reaches, so a class of another file is
interpreted over that file's tree with that file's imports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from tapelint import ops
from tapelint.analysis import cst_nodes, torch_api
from tapelint.analysis.imports import ImportMap, dotted_name
from tapelint.analysis.project import CACHE, Found, ModuleCache, ModuleSummary, Project
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
    initialised: bool = False  # `state` holds what `__init__` leaves (set by the driver)


@dataclass
class Program:
    """One module's definitions, and the configured names that mean backward or tracked."""

    module: cst.Module
    imports: ImportMap
    functions: dict[str, cst.FunctionDef]
    classes: dict[str, ClassInfo]
    backward_names: frozenset[str]
    tracked_names: frozenset[str]

    path: str = ""
    summary: Optional[ModuleSummary] = None  # what it defines and imports, when part of a project
    project: Optional[Project] = None

    @classmethod
    def of(cls, module: cst.Module, settings: Settings, path: str = "", project: Optional[Project] = None) -> Program:
        imports = project.cache.import_map(path, module) if project is not None else ImportMap.of(module)
        program = cls(module, imports, {}, {}, frozenset(settings.backward_functions),
                      frozenset(settings.tracked_functions), path, None, project)
        if project is not None and path:
            program.summary = project.summary_of(path, module)
            project.add(path, program)  # before its classes: an import cycle back here sees what is defined so far
        homes = project.homes if project is not None else {}
        for stmt in module.body:
            if type(stmt) is cst_nodes.FunctionDef:
                program.functions[stmt.name.value] = stmt
                homes[stmt] = program
            elif type(stmt) is cst_nodes.ClassDef:
                info = program.classes[stmt.name.value] = program._class_info(stmt)
                homes[stmt] = program
                for method in info.methods.values():
                    homes.setdefault(method, program)  # an inherited method stays its own module's
        return program

    @classmethod
    def root(cls, module: cst.Module, settings: Settings, path: str, cache: Optional[ModuleCache] = None) -> Program:
        """The program of the file being linted, with the project its imports
        reach (their trees from `cache`: the parse cache, or the quick one)."""
        def load(other: str, other_module: cst.Module, summary: ModuleSummary) -> Program:
            return cls.of(other_module, settings, other, project)

        project = Project(settings.src, settings.project_root, load, cache if cache is not None else CACHE)
        return cls.of(module, settings, path, project)

    def definition(self, dotted: str) -> Optional[Found]:
        """The first-party definition (another module's function or class)
        that the dotted name `dotted` stands for here, if any."""
        summary = self.summary
        if summary is None or self.project is None:
            return None
        head = dotted.partition(".")[0]
        if head in self.functions or head in self.classes:
            return None
        if not head or (summary.import_of(head) is None and not summary.star_imports
                        and summary.alias_of(head) is None):
            return None
        return self.project.lookup(summary, dotted.split("."))

    def foreign_class(self, dotted: str) -> Optional[ClassInfo]:
        found = self.definition(dotted)
        if found is None or type(found.node) is not cst_nodes.ClassDef:
            return None
        return self.class_info(found.node)

    def class_info(self, node: cst.ClassDef) -> Optional[ClassInfo]:
        """The class `node` as defined here or in the module it comes from."""
        home = self.home_of(node)
        info = home.classes.get(node.name.value)
        return info if info is not None and info.node is node else None

    def home_of(self, node: cst.CSTNode) -> Program:
        """The program of the module that defines `node` (this one when unknown)."""
        return self.project.homes.get(node, self) if self.project is not None else self

    def release(self) -> None:
        """Forget the project (its programs refer back to it) once the analysis is done."""
        if self.project is not None:
            self.project.close()

    def _class_info(self, node: cst.ClassDef) -> ClassInfo:
        methods = {**self.inherited_methods(node),
                   **{s.name.value: s for s in node.body.body if type(s) is cst_nodes.FunctionDef}}
        is_module = any(self._is_module_base(base.value) for base in node.bases)
        parametric = is_module and self._creates_parameters(node)
        return ClassInfo(node, methods, is_module, parametric)

    def base_classes(self, node: cst.ClassDef) -> list[ClassInfo]:
        """The project classes `node` derives from (this module's or another's), in order."""
        found = []
        for base in node.bases:
            name = dotted_name(base.value)
            info = (self.classes.get(name) or self.foreign_class(name)) if name is not None else None
            if info is not None and info.node is not node:
                found.append(info)
        return found

    def inherited_methods(self, node: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        """The methods `node` inherits from project classes (a training loop
        written in a base trainer of another file runs with the subclass's
        hooks): the first base that has a name wins, as in Python's MRO."""
        methods: dict[str, cst.FunctionDef] = {}
        for info in reversed(self.base_classes(node)):
            methods.update(info.methods)
        return methods

    def _is_module_base(self, expr: cst.BaseExpression) -> bool:
        name = dotted_name(expr)
        if name is None:
            return False
        if (self.imports.resolve(name) or "") in torch_api.MODULE_BASES:
            return True
        local = self.classes.get(name) or self.foreign_class(name)
        return local is not None and local.is_module

    def _creates_parameters(self, node: cst.ClassDef) -> bool:
        """Does this module class own parameters: a parametric layer, a
        `Parameter` or a parametric module class of this file assigned in its
        body, or a parametric base class?"""
        parametric = set(ops.PARAMETRIC_MODULES) | {"Parameter"}
        parametric |= {name for name, info in self.classes.items() if info.parametric}
        for stmt in walk_statements(node.body.body):
            statement = type(stmt) in (cst_nodes.Assign, cst_nodes.AnnAssign, cst_nodes.Expr)
            value = getattr(stmt, "value", None) if statement else None
            if type(value) is cst_nodes.Call:
                callee = dotted_name(value.func) or ""
                if callee.split(".")[-1] in parametric:
                    return True
                if (foreign := self.foreign_class(callee)) is not None and foreign.parametric:
                    return True
        return any(
            (info := self.classes.get(name) or self.foreign_class(name)) is not None and info.parametric
            for name in (dotted_name(base.value) or "" for base in node.bases)
        )

    def is_no_grad_function(self, fn: cst.FunctionDef) -> bool:
        """Decorated with `@torch.no_grad()` / `@torch.inference_mode()`."""
        for decorator in fn.decorators:
            expr = decorator.decorator
            func = expr.func if type(expr) is cst_nodes.Call else expr
            name = dotted_name(func)
            if name is not None and self.imports.resolve(name) in torch_api.NO_GRAD_CONTEXTS:
                return True
        return False
