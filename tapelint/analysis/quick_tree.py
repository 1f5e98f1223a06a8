"""A libcst tree built from CPython's `ast`, at a fraction of libcst's parse.

libcst's parser costs about ten times CPython's, and on the files the
analysis clears it was a third of tapelint's CPU. The analysis reads a
tree's semantic fields (a call's function and arguments, an `if`'s test and
branches, a literal's text), never its whitespace, comments or parentheses.
So the tree of a file the analysis is only asked to clear is built from
CPython's parse: the same libcst node classes with the same semantic fields,
every formatting field a shared default (`quick_module`).

Such a tree is trusted only to find nothing (`lint._quick_finds_nothing`): a
file whose quick analysis finds a hazard is linted again from libcst's own
parse, so every diagnostic, position and fix comes from, and applies to, the
real text. `tests/test_quick_tree.py` compares the two trees field by field
(`semantic_difference`) on every fixture and on generated code, and the
analysis of both on every fixture.

What the tree leaves out, and is never read by the analysis: whitespace,
comments, parentheses and punctuation (a slice's second colon), and the
text between an f-string's expressions (its processed value stands in).
Syntax it does not build (`match`, type parameters and aliases, template
strings) raises `Unsupported`: that file is parsed by libcst.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, Final, Optional, Union, cast

import libcst as cst

from tapelint.analysis import ast_nodes, cst_nodes
from tapelint.analysis.parsing import python_tree, span
from tapelint.files import source_lines

# `TAPELINT_QUICK=0`: every tree is libcst's (to compare, or to rule this module out).
ENABLED = os.environ.get("TAPELINT_QUICK", "1") != "0"


class Unsupported(ValueError):
    """Syntax this module does not build: libcst parses the file instead."""


def quick_module(text: str, tree: Optional[ast.Module] = None, left_out: frozenset[int] = frozenset()) -> cst.Module:
    """The libcst module of `text`, built from its parse `tree` (parsed here
    when not given), without the defs, classes and methods whose first lines
    (0-based, decorators included) are `left_out`: the tree of
    `thin.thin_source`'s text, where a method left out leaves `pass`. Raises
    what `ast.parse` raises, and `Unsupported`."""
    if tree is None:
        tree = python_tree(text)
    return _Builder(text).module(_without(tree, left_out) if left_out else tree)


def _without(tree: ast.Module, left_out: frozenset[int]) -> ast.Module:
    """`tree` without the top-level defs and classes, and the methods of
    top-level classes, that start on the lines `left_out` (a method: a
    `pass` in its place, so its class keeps a body)."""
    def out(stmt: ast.stmt) -> bool:
        return isinstance(stmt, _DEFINITIONS) and span(stmt)[0] in left_out

    body: list[ast.stmt] = []
    for stmt in tree.body:
        if out(stmt):
            continue
        if isinstance(stmt, ast.ClassDef) and any(out(s) for s in stmt.body):
            kept: list[ast.stmt] = [_pass_at(s) if out(s) else s for s in stmt.body]
            stmt = copy.copy(stmt)
            stmt.body = kept
        body.append(stmt)
    return ast_nodes.Module(body=body, type_ignores=[])


def _pass_at(stmt: ast.stmt) -> ast.Pass:
    """The `pass` the thin text leaves on a method's first line."""
    line = span(stmt)[0] + 1
    return ast_nodes.Pass(lineno=line, col_offset=stmt.col_offset, end_lineno=line, end_col_offset=stmt.col_offset + 4)


# --------------------------------------------------------------- node making

Maker = Callable[..., Any]


def _maker(kind: type) -> Maker:
    """A function making a `kind` node from keyword arguments, every field
    not given its default, without libcst's constructor (which makes each
    default anew and validates what a parse guarantees). The defaults are
    made once and shared by every node (nodes are immutable).

    Each field is set through its slot's own setter (`kind.field.__set__`,
    bound once here): `object.__setattr__` would look the slot up in the
    class and copy its arguments at every call, a third of a node's cost.
    The fields are plain parameters: a call fills those not given from the
    defaults' tuple, where keyword-only ones are looked up in a dict one by
    one (libcst's fields without a default come first, as plain ones need)."""
    namespace: dict[str, Any] = {"new": object.__new__, "kind": kind}
    params, body = [], []
    for index, field in enumerate(dataclasses.fields(kind)):
        if field.default is not dataclasses.MISSING:
            namespace[f"default{index}"] = field.default
            params.append(f"{field.name}=default{index}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"default{index}"] = field.default_factory()
            params.append(f"{field.name}=default{index}")
        else:
            params.append(field.name)
        namespace[f"set{index}"] = getattr(kind, field.name).__set__
        body.append(f"    set{index}(node, {field.name})\n")
    exec(f"def make({', '.join(params)}):\n    node = new(kind)\n{''.join(body)}    return node\n", namespace)
    return cast(Maker, namespace["make"])


# The node classes built here, each with its maker: `make.Call(func=..., args=...)`.
make: Final = SimpleNamespace(**{name: _maker(getattr(cst, name)) for name in (
    "And", "AnnAssign", "Annotation", "Arg", "AsName", "Assert", "Assign", "AssignTarget", "Asynchronous",
    "Attribute", "AugAssign", "Await", "BinaryOperation", "BooleanOperation", "Break", "Call", "ClassDef",
    "CompFor", "CompIf", "Comparison", "ComparisonTarget", "ConcatenatedString", "Continue", "Decorator", "Del",
    "Dict", "DictComp", "DictElement", "Dot", "Element", "Ellipsis", "Else", "ExceptHandler", "ExceptStarHandler",
    "Expr", "Finally", "Float", "For", "FormattedString", "FormattedStringExpression", "FormattedStringText",
    "From", "FunctionDef", "GeneratorExp", "Global", "If", "IfExp", "Imaginary", "Import", "ImportAlias",
    "ImportFrom", "ImportStar", "IndentedBlock", "Index", "Integer", "Lambda", "List", "ListComp", "Module", "Name",
    "NameItem", "NamedExpr", "Nonlocal", "Or", "Param", "ParamSlash", "ParamStar", "Parameters", "Pass", "Raise",
    "Return", "Set", "SetComp", "SimpleStatementLine", "SimpleStatementSuite", "SimpleString", "Slice",
    "StarredDictElement", "StarredElement", "Subscript", "SubscriptElement", "Try", "TryStar", "Tuple",
    "UnaryOperation", "While", "With", "WithItem", "Yield",
)})

# ast's operator classes, by the name of libcst's (`x += y` is libcst's `AddAssign`).
_BINARY_NAMES: tuple[tuple[type, str], ...] = (
    (ast.Add, "Add"), (ast.Sub, "Subtract"), (ast.Mult, "Multiply"), (ast.Div, "Divide"),
    (ast.FloorDiv, "FloorDivide"), (ast.Mod, "Modulo"), (ast.Pow, "Power"), (ast.MatMult, "MatrixMultiply"),
    (ast.LShift, "LeftShift"), (ast.RShift, "RightShift"), (ast.BitOr, "BitOr"), (ast.BitAnd, "BitAnd"),
    (ast.BitXor, "BitXor"),
)
_BINARY: dict[type, Maker] = {op: _maker(getattr(cst, name)) for op, name in _BINARY_NAMES}
_AUGMENTED: dict[type, Maker] = {op: _maker(getattr(cst, name + "Assign")) for op, name in _BINARY_NAMES}
_UNARY: dict[type, Maker] = {op: _maker(getattr(cst, name)) for op, name in (
    (ast.UAdd, "Plus"), (ast.USub, "Minus"), (ast.Invert, "BitInvert"), (ast.Not, "Not"))}
_COMPARE: dict[type, Maker] = {op: _maker(getattr(cst, name)) for op, name in (
    (ast.Eq, "Equal"), (ast.NotEq, "NotEqual"), (ast.Lt, "LessThan"), (ast.LtE, "LessThanEqual"),
    (ast.Gt, "GreaterThan"), (ast.GtE, "GreaterThanEqual"), (ast.Is, "Is"), (ast.IsNot, "IsNot"), (ast.In, "In"),
    (ast.NotIn, "NotIn"))}
_CONVERSIONS = {-1: None, 115: "s", 114: "r", 97: "a"}
# One string literal (prefix, then its quotes and body), or what may stand
# between two literals of an implicit concatenation. Each body is a run of
# plain characters, then of escapes or lone quotes each followed by such a
# run: a docstring is matched by a few long runs, not character by character.
_STRING = re.compile(
    r"[rRbBuUfF]{0,2}(?:"
    r"'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"""|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"""
    r'''|"[^"\\\n]*(?:\\.[^"\\\n]*)*")''',
    re.DOTALL,
)
_BETWEEN = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*")
# libcst's small statements, by class (`isinstance` on their abstract base goes through `ABCMeta`).
_SMALL: Final = frozenset(kind for kind in vars(cst).values()
                          if isinstance(kind, type) and issubclass(kind, cst.BaseSmallStatement))
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _Builder:
    """Builds one module's nodes; `text` gives literals their source text."""

    def __init__(self, text: str) -> None:
        self.lines = source_lines(text)

    # ------------------------------------------------------------ dispatch

    def module(self, tree: ast.Module) -> cst.Module:
        return make.Module(body=self._block(tree.body))

    def expr(self, node: ast.expr) -> Any:
        build = _EXPRESSIONS.get(type(node))
        if build is None:
            raise Unsupported(type(node).__name__)
        return build(self, node)

    def _optional(self, node: Optional[ast.expr]) -> Any:
        return None if node is None else self.expr(node)

    def stmt(self, node: ast.stmt) -> Any:
        build = _STATEMENTS.get(type(node))
        if build is None:
            raise Unsupported(type(node).__name__)
        return build(self, node)

    # ---------------------------------------------------------- statements

    def _block(self, body: Sequence[ast.stmt]) -> tuple[Any, ...]:
        """A block's statements, small ones grouped by the line they share
        (`a = 1; b = 2` is one `SimpleStatementLine`)."""
        out: list[Any] = []
        line: list[Any] = []
        line_end = -1
        for node in body:
            built = self.stmt(node)
            if type(built) in _SMALL:
                if line and node.lineno == line_end:
                    line.append(built)
                else:
                    if line:
                        out.append(make.SimpleStatementLine(body=tuple(line)))
                    line = [built]
                line_end = node.end_lineno or node.lineno
                continue
            if line:
                out.append(make.SimpleStatementLine(body=tuple(line)))
                line = []
            out.append(built)
        if line:
            out.append(make.SimpleStatementLine(body=tuple(line)))
        return tuple(out)

    def _suite(self, body: Sequence[ast.stmt]) -> Any:
        """A compound statement's body: on its header's line (`if x: y`) a
        `SimpleStatementSuite`, else an indented block."""
        first = body[0]
        if self._columns(first.lineno - 1, 0, first.col_offset).strip():
            return make.SimpleStatementSuite(body=tuple([self.stmt(node) for node in body]))
        return make.IndentedBlock(body=self._block(body))

    def _else(self, body: Sequence[ast.stmt]) -> Any:
        return make.Else(body=self._suite(body)) if body else None

    def _expr_stmt(self, node: ast.Expr) -> Any:
        return make.Expr(value=self.expr(node.value))

    def _assign(self, node: ast.Assign) -> Any:
        targets = tuple([make.AssignTarget(target=self.expr(target)) for target in node.targets])
        return make.Assign(targets=targets, value=self.expr(node.value))

    def _aug_assign(self, node: ast.AugAssign) -> Any:
        return make.AugAssign(target=self.expr(node.target), operator=_AUGMENTED[type(node.op)](),
                              value=self.expr(node.value))

    def _ann_assign(self, node: ast.AnnAssign) -> Any:
        return make.AnnAssign(target=self.expr(node.target),
                              annotation=make.Annotation(annotation=self.expr(node.annotation)),
                              value=self._optional(node.value))

    def _return(self, node: ast.Return) -> Any:
        return make.Return(value=self._optional(node.value))

    def _raise(self, node: ast.Raise) -> Any:
        cause = None if node.cause is None else make.From(item=self.expr(node.cause))
        return make.Raise(exc=self._optional(node.exc), cause=cause)

    def _assert(self, node: ast.Assert) -> Any:
        return make.Assert(test=self.expr(node.test), msg=self._optional(node.msg))

    def _delete(self, node: ast.Delete) -> Any:
        if len(node.targets) == 1:
            return make.Del(target=self.expr(node.targets[0]))
        return make.Del(target=make.Tuple(elements=tuple([self._element(t) for t in node.targets])))

    def _global(self, node: ast.Global) -> Any:
        return make.Global(names=tuple([make.NameItem(name=make.Name(value=name)) for name in node.names]))

    def _nonlocal(self, node: ast.Nonlocal) -> Any:
        return make.Nonlocal(names=tuple([make.NameItem(name=make.Name(value=name)) for name in node.names]))

    def _import(self, node: ast.Import) -> Any:
        return make.Import(names=tuple([self._alias(alias) for alias in node.names]))

    def _import_from(self, node: ast.ImportFrom) -> Any:
        if len(node.names) == 1 and node.names[0].name == "*":
            names: Any = make.ImportStar()
        else:
            names = tuple([self._alias(alias) for alias in node.names])
        module = _dotted(node.module) if node.module else None
        return make.ImportFrom(module=module, names=names, relative=(make.Dot(),) * (node.level or 0))

    def _alias(self, alias: ast.alias) -> Any:
        asname = None if alias.asname is None else make.AsName(name=make.Name(value=alias.asname))
        return make.ImportAlias(name=_dotted(alias.name), asname=asname)

    def _if(self, node: ast.If) -> Any:
        orelse: Any = None
        if node.orelse:
            first = node.orelse[0]
            if len(node.orelse) == 1 and isinstance(first, ast.If) and self._is_elif(first):
                orelse = self._if(first)
            else:
                orelse = self._else(node.orelse)
        return make.If(test=self.expr(node.test), body=self._suite(node.body), orelse=orelse)

    def _is_elif(self, node: ast.If) -> bool:
        """`elif x:`, not `else:` then `if x:` (the same `ast`, not the same libcst tree)."""
        return self._columns(node.lineno - 1, node.col_offset).startswith("elif")

    def _for(self, node: Union[ast.For, ast.AsyncFor]) -> Any:
        return make.For(target=self.expr(node.target), iter=self.expr(node.iter), body=self._suite(node.body),
                        orelse=self._else(node.orelse), asynchronous=_asynchronous(type(node) is ast_nodes.AsyncFor))

    def _while(self, node: ast.While) -> Any:
        return make.While(test=self.expr(node.test), body=self._suite(node.body), orelse=self._else(node.orelse))

    def _with(self, node: Union[ast.With, ast.AsyncWith]) -> Any:
        items = []
        for item in node.items:
            target = item.optional_vars
            asname = None if target is None else make.AsName(name=self.expr(target))
            items.append(make.WithItem(item=self.expr(item.context_expr), asname=asname))
        return make.With(items=tuple(items), body=self._suite(node.body),
                         asynchronous=_asynchronous(type(node) is ast_nodes.AsyncWith))

    def _try(self, node: Any) -> Any:
        star = type(node) is not ast_nodes.Try
        handler_kind = make.ExceptStarHandler if star else make.ExceptHandler
        handlers = []
        for handler in node.handlers:
            name = None if handler.name is None else make.AsName(name=make.Name(value=handler.name))
            handlers.append(handler_kind(body=self._suite(handler.body), type=self._optional(handler.type),
                                         name=name))
        finalbody = make.Finally(body=self._suite(node.finalbody)) if node.finalbody else None
        return (make.TryStar if star else make.Try)(body=self._suite(node.body), handlers=tuple(handlers),
                                                    orelse=self._else(node.orelse), finalbody=finalbody)

    def _function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> Any:
        if getattr(node, "type_params", None):
            raise Unsupported("type parameters")
        returns = None if node.returns is None else make.Annotation(annotation=self.expr(node.returns))
        return make.FunctionDef(name=make.Name(value=node.name), params=self._parameters(node.args),
                                body=self._suite(node.body), decorators=self._decorators(node.decorator_list),
                                returns=returns, asynchronous=_asynchronous(type(node) is ast_nodes.AsyncFunctionDef))

    def _class(self, node: ast.ClassDef) -> Any:
        if getattr(node, "type_params", None):
            raise Unsupported("type parameters")
        bases = tuple([self._argument(base) for base in node.bases])
        keywords = tuple([self._keyword(keyword) for keyword in node.keywords])
        return make.ClassDef(name=make.Name(value=node.name), body=self._suite(node.body), bases=bases,
                             keywords=keywords, decorators=self._decorators(node.decorator_list))

    def _decorators(self, decorators: Sequence[ast.expr]) -> tuple[Any, ...]:
        return tuple([make.Decorator(decorator=self.expr(decorator)) for decorator in decorators])

    def _parameters(self, args: ast.arguments) -> Any:
        positional = [*args.posonlyargs, *args.args]
        defaults: list[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        built = tuple([self._param(arg, default) for arg, default in zip(positional, defaults)])
        posonly, params = built[:len(args.posonlyargs)], built[len(args.posonlyargs):]
        star_arg: Any = cst_nodes.MaybeSentinel.DEFAULT
        if args.vararg is not None:
            star_arg = self._param(args.vararg, None, "*")
        elif args.kwonlyargs:
            star_arg = make.ParamStar()
        kwonly = tuple([self._param(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults)])
        star_kwarg = None if args.kwarg is None else self._param(args.kwarg, None, "**")
        return make.Parameters(params=params, star_arg=star_arg, kwonly_params=kwonly, star_kwarg=star_kwarg,
                               posonly_params=posonly,
                               posonly_ind=make.ParamSlash() if posonly else cst_nodes.MaybeSentinel.DEFAULT)

    def _param(self, arg: ast.arg, default: Optional[ast.expr], star: str = "") -> Any:
        annotation = None if arg.annotation is None else make.Annotation(annotation=self.expr(arg.annotation))
        return make.Param(name=make.Name(value=arg.arg), annotation=annotation, default=self._optional(default),
                          star=star)

    # --------------------------------------------------------- expressions

    def _name(self, node: ast.Name) -> Any:
        return make.Name(value=node.id)

    def _attribute(self, node: ast.Attribute) -> Any:
        return make.Attribute(value=self.expr(node.value), attr=make.Name(value=node.attr))

    def _call(self, node: ast.Call) -> Any:
        keywords = node.keywords
        if keywords and any(type(arg) is ast_nodes.Starred for arg in node.args):
            return make.Call(func=self.expr(node.func), args=self._arguments_in_order(node))
        args = [self._argument(arg) for arg in node.args]
        if keywords:
            args.extend([self._keyword(keyword) for keyword in keywords])
        return make.Call(func=self.expr(node.func), args=tuple(args))

    def _arguments_in_order(self, node: ast.Call) -> tuple[Any, ...]:
        """`f(x=1, *rest)`: a call's arguments in source order, not `ast`'s
        (positional ones, then keywords)."""
        parts: list[Union[ast.expr, ast.keyword]] = [*node.args, *node.keywords]
        parts.sort(key=lambda part: (part.lineno, part.col_offset))
        return tuple([self._keyword(part) if isinstance(part, ast.keyword) else self._argument(part)
                      for part in parts])

    def _argument(self, node: ast.expr) -> Any:
        if type(node) is ast_nodes.Starred:
            return make.Arg(value=self.expr(node.value), star="*")
        return make.Arg(value=self.expr(node))

    def _keyword(self, node: ast.keyword) -> Any:
        if node.arg is None:
            return make.Arg(value=self.expr(node.value), star="**")
        return make.Arg(value=self.expr(node.value), keyword=make.Name(value=node.arg))

    def _constant(self, node: ast.Constant) -> Any:
        value = node.value
        if value is None or value is True or value is False:
            return make.Name(value=str(value))
        if value is ...:
            return make.Ellipsis()
        if isinstance(value, (str, bytes)):
            return self._string(node)
        text = self._segment(node)
        if text is None:
            text = repr(value)
        if isinstance(value, complex):
            return make.Imaginary(value=text)
        if isinstance(value, float):
            return make.Float(value=text)
        return make.Integer(value=text)

    def _string(self, node: ast.Constant) -> Any:
        """One literal, or an implicit concatenation of several."""
        text = self._segment(node)
        literals = _literals(text) if text is not None else None
        if not literals:
            return make.SimpleString(value=repr(node.value))
        return _concatenation([make.SimpleString(value=literal) for literal in literals])

    def _formatted(self, node: ast.JoinedStr) -> Any:
        """An f-string; an implicit concatenation holding one as libcst
        nests it, each f-string literal built from its own parse."""
        text = self._segment(node)
        literals = _literals(text) if text is not None else None
        if literals is None or len(literals) == 1:
            return make.FormattedString(parts=tuple(self._formatted_parts(node.values)), start='f"', end='"')
        return _concatenation([self._literal(literal) for literal in literals])

    def _literal(self, literal: str) -> Any:
        """One literal of a concatenation holding an f-string."""
        prefix = literal[:len(literal) - len(literal.lstrip("rRbBuUfF"))]
        if "f" not in prefix.lower():
            return make.SimpleString(value=literal)
        parsed = python_tree(literal).body[0]
        if type(parsed) is not ast_nodes.Expr or type(parsed.value) is not ast_nodes.JoinedStr:
            raise Unsupported("an f-string literal that is not one")
        return make.FormattedString(parts=tuple(_Builder(literal)._formatted_parts(parsed.value.values)),
                                    start='f"', end='"')

    def _formatted_parts(self, values: Sequence[ast.expr]) -> list[Any]:
        parts: list[Any] = []
        for value in values:
            if isinstance(value, ast.FormattedValue):
                spec = value.format_spec  # an f-string itself, when given
                parts.append(make.FormattedStringExpression(
                    expression=self.expr(value.value), conversion=_CONVERSIONS.get(value.conversion),
                    format_spec=tuple(self._formatted_parts(spec.values)) if isinstance(spec, ast.JoinedStr) else None))
            elif type(value) is ast_nodes.Constant:
                parts.append(make.FormattedStringText(value=str(value.value)))
            else:
                raise Unsupported(type(value).__name__)
        return parts

    def _subscript(self, node: ast.Subscript) -> Any:
        index = node.slice
        if type(index) is ast_nodes.Tuple and index.elts and not self._parenthesized(index):
            elements = tuple([self._subscript_element(item) for item in index.elts])
        else:
            elements = (self._subscript_element(index),)
        return make.Subscript(value=self.expr(node.value), slice=elements)

    def _subscript_element(self, node: ast.expr) -> Any:
        if type(node) is ast_nodes.Slice:
            return make.SubscriptElement(slice=self._bare_slice(node))
        if type(node) is ast_nodes.Starred:
            return make.SubscriptElement(slice=make.Index(value=self.expr(node.value), star="*"))
        return make.SubscriptElement(slice=make.Index(value=self.expr(node)))

    def _bare_slice(self, node: ast.Slice) -> Any:
        return make.Slice(lower=self._optional(node.lower), upper=self._optional(node.upper),
                          step=self._optional(node.step))

    def _binary(self, node: ast.BinOp) -> Any:
        return make.BinaryOperation(left=self.expr(node.left), operator=_BINARY[type(node.op)](),
                                    right=self.expr(node.right))

    def _unary(self, node: ast.UnaryOp) -> Any:
        return make.UnaryOperation(operator=_UNARY[type(node.op)](), expression=self.expr(node.operand))

    def _boolean(self, node: ast.BoolOp) -> Any:
        """`a and b and c` as libcst nests it: (`a and b`) and `c`."""
        operator = make.And if type(node.op) is ast_nodes.And else make.Or
        result = self.expr(node.values[0])
        for value in node.values[1:]:
            result = make.BooleanOperation(left=result, operator=operator(), right=self.expr(value))
        return result

    def _compare(self, node: ast.Compare) -> Any:
        targets = tuple([make.ComparisonTarget(operator=_COMPARE[type(op)](), comparator=self.expr(right))
                         for op, right in zip(node.ops, node.comparators)])
        return make.Comparison(left=self.expr(node.left), comparisons=targets)

    def _element(self, node: ast.expr) -> Any:
        if type(node) is ast_nodes.Starred:
            return make.StarredElement(value=self.expr(node.value))
        return make.Element(value=self.expr(node))

    def _tuple(self, node: ast.Tuple) -> Any:
        return make.Tuple(elements=tuple([self._element(item) for item in node.elts]))

    def _list(self, node: ast.List) -> Any:
        return make.List(elements=tuple([self._element(item) for item in node.elts]))

    def _set(self, node: ast.Set) -> Any:
        return make.Set(elements=tuple([self._element(item) for item in node.elts]))

    def _dict(self, node: ast.Dict) -> Any:
        elements = tuple([
            make.StarredDictElement(value=self.expr(value)) if key is None
            else make.DictElement(key=self.expr(key), value=self.expr(value))
            for key, value in zip(node.keys, node.values)
        ])
        return make.Dict(elements=elements)

    def _if_expression(self, node: ast.IfExp) -> Any:
        return make.IfExp(test=self.expr(node.test), body=self.expr(node.body), orelse=self.expr(node.orelse))

    def _lambda(self, node: ast.Lambda) -> Any:
        return make.Lambda(params=self._parameters(node.args), body=self.expr(node.body))

    def _named(self, node: ast.NamedExpr) -> Any:
        return make.NamedExpr(target=self.expr(node.target), value=self.expr(node.value))

    def _await(self, node: ast.Await) -> Any:
        return make.Await(expression=self.expr(node.value))

    def _yield(self, node: ast.Yield) -> Any:
        return make.Yield(value=self._optional(node.value))

    def _yield_from(self, node: ast.YieldFrom) -> Any:
        return make.Yield(value=make.From(item=self.expr(node.value)))

    def _comprehension(self, generators: Sequence[ast.comprehension]) -> Any:
        inner = None
        for generator in reversed(generators):
            ifs = tuple([make.CompIf(test=self.expr(test)) for test in generator.ifs])
            inner = make.CompFor(target=self.expr(generator.target), iter=self.expr(generator.iter), ifs=ifs,
                                 inner_for_in=inner, asynchronous=_asynchronous(bool(generator.is_async)))
        return inner

    def _list_comp(self, node: ast.ListComp) -> Any:
        return make.ListComp(elt=self.expr(node.elt), for_in=self._comprehension(node.generators))

    def _set_comp(self, node: ast.SetComp) -> Any:
        return make.SetComp(elt=self.expr(node.elt), for_in=self._comprehension(node.generators))

    def _generator(self, node: ast.GeneratorExp) -> Any:
        return make.GeneratorExp(elt=self.expr(node.elt), for_in=self._comprehension(node.generators))

    def _dict_comp(self, node: ast.DictComp) -> Any:
        return make.DictComp(key=self.expr(node.key), value=self.expr(node.value),
                             for_in=self._comprehension(node.generators))

    # ---------------------------------------------------------- source text

    def _columns(self, index: int, start: int, end: Optional[int] = None) -> str:
        """Line `index` (0-based) from column `start` to `end`, columns as
        `ast` counts them: UTF-8 bytes (on an ASCII line, characters)."""
        line = self.lines[index]
        if line.isascii():
            return line[start:end]
        return line.encode("utf-8")[start:end].decode("utf-8", "replace")

    def _parenthesized(self, node: ast.expr) -> bool:
        """Whether `node`'s text is one pair of parentheses around the rest
        (`(a, b)`; not `(a) + 1, b` or `(a), (b)`)."""
        text = self._segment(node)
        if not text or text[0] != "(" or text[-1] != ")":
            return False
        depth = 0
        position = 0
        while position < len(text):
            char = text[position]
            if char in "\'\"":
                match = _STRING.match(text, position)
                position = match.end() if match is not None else position + 1
                continue
            if char == "#":
                end = text.find("\n", position)
                position = len(text) if end < 0 else end
                continue
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    return position == len(text) - 1
            position += 1
        return False

    def _segment(self, node: ast.expr) -> Optional[str]:
        """The source text of `node`, None when its position is not known."""
        end_line, end_col = node.end_lineno, node.end_col_offset
        if end_line is None or end_col is None or end_line > len(self.lines):
            return None
        first, last = node.lineno - 1, end_line - 1
        if first == last:
            return self._columns(first, node.col_offset, end_col)
        return "".join([self._columns(first, node.col_offset), *self.lines[first + 1:last],
                        self._columns(last, 0, end_col)])


# What builds each kind of ast node (class-level: a builder's own bound methods
# in a table it holds would be a reference cycle per module built).
_EXPRESSIONS: dict[type, Callable[[_Builder, Any], Any]] = {
    ast.Name: _Builder._name, ast.Attribute: _Builder._attribute, ast.Call: _Builder._call,
    ast.Constant: _Builder._constant, ast.Subscript: _Builder._subscript, ast.BinOp: _Builder._binary,
    ast.UnaryOp: _Builder._unary, ast.BoolOp: _Builder._boolean, ast.Compare: _Builder._compare,
    ast.Tuple: _Builder._tuple, ast.List: _Builder._list, ast.Set: _Builder._set, ast.Dict: _Builder._dict,
    ast.IfExp: _Builder._if_expression, ast.Lambda: _Builder._lambda, ast.NamedExpr: _Builder._named,
    ast.Await: _Builder._await, ast.Yield: _Builder._yield, ast.YieldFrom: _Builder._yield_from,
    ast.ListComp: _Builder._list_comp, ast.SetComp: _Builder._set_comp, ast.GeneratorExp: _Builder._generator,
    ast.DictComp: _Builder._dict_comp, ast.JoinedStr: _Builder._formatted,
}
_STATEMENTS: dict[type, Callable[[_Builder, Any], Any]] = {
    ast.Expr: _Builder._expr_stmt, ast.Assign: _Builder._assign, ast.AugAssign: _Builder._aug_assign,
    ast.AnnAssign: _Builder._ann_assign, ast.Return: _Builder._return, ast.Raise: _Builder._raise,
    ast.Assert: _Builder._assert, ast.Pass: lambda builder, node: make.Pass(),
    ast.Break: lambda builder, node: make.Break(), ast.Continue: lambda builder, node: make.Continue(),
    ast.Delete: _Builder._delete, ast.Global: _Builder._global, ast.Nonlocal: _Builder._nonlocal,
    ast.Import: _Builder._import, ast.ImportFrom: _Builder._import_from,
    ast.If: _Builder._if, ast.For: _Builder._for, ast.AsyncFor: _Builder._for, ast.While: _Builder._while,
    ast.With: _Builder._with, ast.AsyncWith: _Builder._with, ast.Try: _Builder._try,
    ast.FunctionDef: _Builder._function, ast.AsyncFunctionDef: _Builder._function, ast.ClassDef: _Builder._class,
}
if hasattr(ast, "TryStar"):
    _STATEMENTS[ast.TryStar] = _Builder._try


def _concatenation(literals: list[Any]) -> Any:
    """Literals concatenated as libcst nests them: `"a" "b" "c"` is `"a"`
    then (`"b"` then `"c"`)."""
    result = literals[-1]
    for index in range(len(literals) - 2, -1, -1):
        result = make.ConcatenatedString(left=literals[index], right=result)
    return result


def _literals(text: str) -> Optional[list[str]]:
    """The string literals of `text`, one literal or an implicit
    concatenation; None when it is not that."""
    found = []
    position = 0
    while position < len(text):
        match = _STRING.match(text, position)
        if match is None:
            return None
        found.append(match.group())
        position = _BETWEEN.match(text, match.end()).end()  # type: ignore[union-attr]
    return found


def _dotted(dotted: str) -> Any:
    parts = dotted.split(".")
    result = make.Name(value=parts[0])
    for part in parts[1:]:
        result = make.Attribute(value=result, attr=make.Name(value=part))
    return result


def _asynchronous(flag: bool) -> Any:
    return make.Asynchronous() if flag else None


# ------------------------------------------------------------- comparison

# Fields of formatting, not meaning: whitespace, comments, parentheses,
# punctuation, and the text between an f-string's expressions and its quotes.
_FORMATTING_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.Comma, cst.Semicolon, cst.Colon, cst.AssignEqual, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket,
    cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.ImportStar, cst.ParamSlash,
)
_FORMATTING_FIELDS = frozenset(("lpar", "rpar", "header", "footer", "leading_lines", "lines_after_decorators",
                                "encoding", "default_indent", "default_newline", "has_trailing_newline", "indent",
                                "start", "end", "equal", "comma", "semicolon", "whitespace_before_colon"))


def semantic_difference(quick: Any, real: Any, path: str = "module") -> Optional[str]:
    """Where `quick` (this module's tree) and `real` (libcst's parse of the
    same text) differ in anything but formatting: None when nowhere."""
    if type(quick) is not type(real):
        return f"{path}: {type(quick).__name__} != {type(real).__name__}"
    if isinstance(real, cst.FormattedString):
        return semantic_difference(_expressions(quick.parts), _expressions(real.parts), f"{path}.parts")
    if isinstance(real, (list, tuple)):
        if len(quick) != len(real):
            return f"{path}: {len(quick)} != {len(real)} items"
        for index, (a, b) in enumerate(zip(quick, real)):
            found = semantic_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if not isinstance(real, cst.CSTNode):
        return None if quick == real else f"{path}: {quick!r} != {real!r}"
    for field in dataclasses.fields(real):
        if field.name in _FORMATTING_FIELDS or field.name.startswith("whitespace"):
            continue
        a, b = getattr(quick, field.name), getattr(real, field.name)
        if isinstance(b, _FORMATTING_TYPES) or (isinstance(b, cst.MaybeSentinel) and isinstance(a, cst.MaybeSentinel)):
            continue
        found = semantic_difference(a, b, f"{path}.{field.name}")
        if found is not None:
            return found
    return None


def _expressions(parts: Sequence[Any]) -> list[Any]:
    """An f-string's expressions, its format specs' included, in order."""
    found = []
    for part in parts:
        if isinstance(part, cst.FormattedStringExpression):
            found.append(part.expression)
            if part.format_spec is not None:
                found.extend(_expressions(part.format_spec))
    return found
