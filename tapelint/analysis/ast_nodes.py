"""CPython `ast`'s node classes as module constants, for the compiled analysis.

Under mypyc a module-level `Final` is a C static, where `ast.Name` in a
compiled function is an attribute lookup on the module at every use: the
type tests of every node the analysis reads (6% of its instructions on four
corpus projects, `docs/performance.md`). Annotations, `isinstance` (whose
narrowing mypy needs) and code run once keep `ast.Name`; functions read
the class here (`tests/test_compiled_constants.py` holds them to it).
"""

from __future__ import annotations

import ast
from typing import Final

And: Final[type[ast.And]] = ast.And
AnnAssign: Final[type[ast.AnnAssign]] = ast.AnnAssign
arg: Final[type[ast.arg]] = ast.arg
Assign: Final[type[ast.Assign]] = ast.Assign
AsyncFor: Final[type[ast.AsyncFor]] = ast.AsyncFor
AsyncFunctionDef: Final[type[ast.AsyncFunctionDef]] = ast.AsyncFunctionDef
AsyncWith: Final[type[ast.AsyncWith]] = ast.AsyncWith
Attribute: Final[type[ast.Attribute]] = ast.Attribute
AugAssign: Final[type[ast.AugAssign]] = ast.AugAssign
BinOp: Final[type[ast.BinOp]] = ast.BinOp
Call: Final[type[ast.Call]] = ast.Call
ClassDef: Final[type[ast.ClassDef]] = ast.ClassDef
Constant: Final[type[ast.Constant]] = ast.Constant
Expr: Final[type[ast.Expr]] = ast.Expr
FunctionDef: Final[type[ast.FunctionDef]] = ast.FunctionDef
Import: Final[type[ast.Import]] = ast.Import
ImportFrom: Final[type[ast.ImportFrom]] = ast.ImportFrom
JoinedStr: Final[type[ast.JoinedStr]] = ast.JoinedStr
Module: Final[type[ast.Module]] = ast.Module
Name: Final[type[ast.Name]] = ast.Name
Pass: Final[type[ast.Pass]] = ast.Pass
Slice: Final[type[ast.Slice]] = ast.Slice
Starred: Final[type[ast.Starred]] = ast.Starred
Subscript: Final[type[ast.Subscript]] = ast.Subscript
Try: Final[type[ast.Try]] = ast.Try
Tuple: Final[type[ast.Tuple]] = ast.Tuple
