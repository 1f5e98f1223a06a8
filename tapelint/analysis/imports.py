"""Resolve local names to canonical dotted names (`T.exp` -> `torch.exp`).

Only imports matter here: `import torch as T`, `from torch import nn,
autograd`, `from torch.nn import functional as F`, `from torch.nn import
Linear`. Imports anywhere in the module count (conditional and function-level
imports included): a name imported from torch anywhere means torch.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes
from tapelint.analysis.syntax import walk_statements

# Array frameworks with an autograd of their own, not PyTorch's.
FOREIGN_FRAMEWORKS = ("mxnet", "jax", "tensorflow", "paddle", "oneflow", "mindspore")


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` as a string, or None for anything that is not a plain chain."""
    parts: list[str] = []
    # Exact types: libcst's ABC-based isinstance is measurably slow on this hot path.
    while type(node) is cst_nodes.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst_nodes.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted_name(node)
    return name or ""


class ImportMap:
    """Local name -> fully qualified name, for every import in a module."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    @classmethod
    def of(cls, module: cst.Module) -> ImportMap:
        imports = cls()
        for stmt in walk_statements(module.body):
            if type(stmt) is cst_nodes.Import:
                imports._add_import(stmt)
            elif type(stmt) is cst_nodes.ImportFrom:
                imports._add_import_from(stmt)
        return imports

    def resolve(self, name: str) -> Optional[str]:
        """Canonical dotted name for a dotted local name, if its head is imported."""
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target


    def foreign_framework(self) -> Optional[str]:
        """The other array framework this module is written for (d2l ships a
        `mxnet.py` beside its `torch.py`), when it imports one and no torch:
        its `backward()` and `autograd` are not PyTorch's."""
        roots = {target.split(".")[0] for target in self.aliases.values()}
        if "torch" in roots:
            return None
        return next((name for name in FOREIGN_FRAMEWORKS if name in roots), None)

    def _add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.aliases.setdefault(head, head)

    def _add_import_from(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = _module_name(node.module)
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}"
