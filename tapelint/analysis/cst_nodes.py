"""libcst's node classes as module constants, for the compiled analysis.

Under mypyc a module-level `Final` is a C static, where `cst.Name` in a
compiled function is an attribute lookup on the module at every use: the
type tests of every node the analysis reads (6% of its instructions on four
corpus projects, `docs/performance.md`). Annotations, `isinstance` (whose
narrowing mypy needs) and code run once keep `cst.Name`; functions read
the class here (`tests/test_compiled_constants.py` holds them to it).
"""

from __future__ import annotations

from typing import Final

import libcst as cst

Add: Final[type[cst.Add]] = cst.Add
And: Final[type[cst.And]] = cst.And
AnnAssign: Final[type[cst.AnnAssign]] = cst.AnnAssign
Arg: Final[type[cst.Arg]] = cst.Arg
Assign: Final[type[cst.Assign]] = cst.Assign
AssignTarget: Final[type[cst.AssignTarget]] = cst.AssignTarget
Attribute: Final[type[cst.Attribute]] = cst.Attribute
AugAssign: Final[type[cst.AugAssign]] = cst.AugAssign
BinaryOperation: Final[type[cst.BinaryOperation]] = cst.BinaryOperation
BitInvert: Final[type[cst.BitInvert]] = cst.BitInvert
BooleanOperation: Final[type[cst.BooleanOperation]] = cst.BooleanOperation
Call: Final[type[cst.Call]] = cst.Call
ClassDef: Final[type[cst.ClassDef]] = cst.ClassDef
Comparison: Final[type[cst.Comparison]] = cst.Comparison
ConcatenatedString: Final[type[cst.ConcatenatedString]] = cst.ConcatenatedString
Del: Final[type[cst.Del]] = cst.Del
DictComp: Final[type[cst.DictComp]] = cst.DictComp
DictElement: Final[type[cst.DictElement]] = cst.DictElement
Element: Final[type[cst.Element]] = cst.Element
Ellipsis: Final[type[cst.Ellipsis]] = cst.Ellipsis
Equal: Final[type[cst.Equal]] = cst.Equal
Expr: Final[type[cst.Expr]] = cst.Expr
Float: Final[type[cst.Float]] = cst.Float
For: Final[type[cst.For]] = cst.For
FormattedString: Final[type[cst.FormattedString]] = cst.FormattedString
FormattedStringExpression: Final[type[cst.FormattedStringExpression]] = cst.FormattedStringExpression
FunctionDef: Final[type[cst.FunctionDef]] = cst.FunctionDef
Global: Final[type[cst.Global]] = cst.Global
If: Final[type[cst.If]] = cst.If
Import: Final[type[cst.Import]] = cst.Import
ImportFrom: Final[type[cst.ImportFrom]] = cst.ImportFrom
IndentedBlock: Final[type[cst.IndentedBlock]] = cst.IndentedBlock
Index: Final[type[cst.Index]] = cst.Index
Integer: Final[type[cst.Integer]] = cst.Integer
Is: Final[type[cst.Is]] = cst.Is
IsNot: Final[type[cst.IsNot]] = cst.IsNot
Lambda: Final[type[cst.Lambda]] = cst.Lambda
List: Final[type[cst.List]] = cst.List
MaybeSentinel: Final[type[cst.MaybeSentinel]] = cst.MaybeSentinel
Module: Final[type[cst.Module]] = cst.Module
Name: Final[type[cst.Name]] = cst.Name
Not: Final[type[cst.Not]] = cst.Not
NotEqual: Final[type[cst.NotEqual]] = cst.NotEqual
Param: Final[type[cst.Param]] = cst.Param
ParserSyntaxError: Final[type[cst.ParserSyntaxError]] = cst.ParserSyntaxError
Plus: Final[type[cst.Plus]] = cst.Plus
Raise: Final[type[cst.Raise]] = cst.Raise
Return: Final[type[cst.Return]] = cst.Return
SimpleStatementLine: Final[type[cst.SimpleStatementLine]] = cst.SimpleStatementLine
SimpleStatementSuite: Final[type[cst.SimpleStatementSuite]] = cst.SimpleStatementSuite
SimpleString: Final[type[cst.SimpleString]] = cst.SimpleString
Slice: Final[type[cst.Slice]] = cst.Slice
StarredElement: Final[type[cst.StarredElement]] = cst.StarredElement
Subscript: Final[type[cst.Subscript]] = cst.Subscript
Subtract: Final[type[cst.Subtract]] = cst.Subtract
Tuple: Final[type[cst.Tuple]] = cst.Tuple
UnaryOperation: Final[type[cst.UnaryOperation]] = cst.UnaryOperation
While: Final[type[cst.While]] = cst.While
Yield: Final[type[cst.Yield]] = cst.Yield
