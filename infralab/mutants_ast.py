"""Mutants of a reference module: a fixed set of AST mutation operators, each applied as a text edit.

Each operator finds its sites in the module's AST and edits the source text at the site only (the
rest of the file keeps its comments, layout and line numbers), so a mutant's diff is the one line
it changes and ``@triton.jit`` kernels, which Triton compiles from their source, are mutated like
any other function. The operators:

=========  =====================================================================================
arith      swap an arithmetic operator (``+ -``, ``* /``, ``// -> /``, ``% -> //``, ``** -> *``),
           also in augmented assignments; drop a unary minus
compare    swap a comparison (``< <=``, ``> >=``, ``== !=``, ``is`` / ``is not``, ``in`` / ``not in``)
boolop     swap ``and`` / ``or``
constant   nudge a number (``n -> n+1, n-1``; ``x -> x+1, x-1`` for floats); flip a bool
default    the same nudges on a parameter's default value
kwarg      drop a keyword argument of a call
boundary   move a range end or a slice bound by one
negate     negate the condition of an ``if``, ``while`` or conditional expression
return     return ``None`` instead of the value
delete     delete a statement (an augmented assignment, a call statement)
=========  =====================================================================================

A mutant's id is ``operator:line:column:occurrence`` (occurrence numbers the variants of one site),
stable across runs of the same source. Docstrings, annotations, decorators, f-strings, ``raise``
and ``assert`` statements and imports are not mutated; a mutant whose AST equals the reference's
or an earlier mutant's is dropped.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

OPERATORS = ("arith", "compare", "boolop", "constant", "default", "kwarg", "boundary", "negate", "return", "delete")

_ARITH = {  # op -> (regex of its token between the operands, replacement)
    ast.Add: (rb"\+", b"-"), ast.Sub: (rb"-", b"+"),
    ast.Mult: (rb"(?<!\*)\*(?!\*)", b"/"), ast.Div: (rb"(?<!/)/(?!/)", b"*"),
    ast.FloorDiv: (rb"//", b"/"), ast.Mod: (rb"%", b"//"), ast.Pow: (rb"\*\*", b"*"),
    ast.LShift: (rb"<<", b">>"), ast.RShift: (rb">>", b"<<"),
    ast.BitAnd: (rb"&", b"|"), ast.BitOr: (rb"\|", b"&"), ast.BitXor: (rb"\^", b"&"),
}
_COMPARE = {
    ast.Lt: (rb"(?<![<>=!])<(?![<=])", b"<="), ast.LtE: (rb"<=", b"<"),
    ast.Gt: (rb"(?<![<>=!-])>(?![>=])", b">="), ast.GtE: (rb">=", b">"),
    ast.Eq: (rb"==", b"!="), ast.NotEq: (rb"!=", b"=="),
    ast.Is: (rb"\bis\b", b"is not"), ast.IsNot: (rb"\bis\s+not\b", b"is"),
    ast.In: (rb"\bin\b", b"not in"), ast.NotIn: (rb"\bnot\s+in\b", b"in"),
}
_BOOL = {ast.And: (rb"\band\b", b"or"), ast.Or: (rb"\bor\b", b"and")}
_RANGES = {"range", "static_range"}  # range(...), tl.range(...), tl.static_range(...)


@dataclass(frozen=True)
class Mutant:
    id: str  # operator:line:column:occurrence
    operator: str
    line: int  # 1-based, where the edit starts
    col: int  # 0-based byte column
    change: str  # what the edit does, e.g. "+ -> -"
    source: str  # the whole mutated module


@dataclass(frozen=True)
class _Edit:
    operator: str
    start: int  # byte offsets into the source
    end: int
    new: bytes


class _Sites(ast.NodeVisitor):
    """Collects the text edits of every operator; skips what must not be mutated."""

    def __init__(self, source: bytes):
        self.src = source
        self.starts = [0]
        for i, ch in enumerate(source):
            if ch == 0x0A:
                self.starts.append(i + 1)
        self.edits: list[_Edit] = []

    # --- positions
    def pos(self, lineno: int, col: int) -> int:
        return self.starts[lineno - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.pos(node.lineno, node.col_offset), self.pos(node.end_lineno, node.end_col_offset)

    def add(self, operator: str, start: int, end: int, new: bytes) -> None:
        self.edits.append(_Edit(operator, start, end, new))

    def token_between(self, a: ast.AST, b: ast.AST, pattern: bytes) -> int | None:
        """Offset of the one token matching ``pattern`` between the end of ``a`` and the start of ``b``."""
        lo, hi = self.span(a)[1], self.span(b)[0]
        gap = re.sub(rb"#[^\n]*", lambda m: b" " * len(m.group()), self.src[lo:hi])  # comments out
        found = list(re.finditer(pattern, gap))
        return lo + found[0].start() if len(found) == 1 else None

    def swap_token(self, operator: str, a: ast.AST, b: ast.AST, table: dict, op: ast.AST) -> None:
        entry = table.get(type(op))
        if entry is None:
            return
        pattern, new = entry
        at = self.token_between(a, b, pattern)
        if at is not None:
            length = re.match(pattern, self.src[at:]).end()
            self.add(operator, at, at + length, new)

    def wrap(self, operator: str, node: ast.AST, before: bytes, after: bytes) -> None:
        start, end = self.span(node)
        self.add(operator, start, end, before + self.src[start:end] + after)

    # --- what is never mutated
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        if isinstance(node.value, ast.Call):
            self.delete(node)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        return

    def visit_Assert(self, node: ast.Assert) -> None:
        return

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return

    def visit_Import(self, node: ast.Import) -> None:
        return

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        args = node.args
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.number(default, "default")
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for stmt in node.body:
            self.visit(stmt)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    # --- the operators
    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.swap_token("arith", node.left, node.right, _ARITH, node.op)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        entry = _ARITH.get(type(node.op))
        if entry is not None:
            at = self.token_between(node.target, node.value, entry[0] + rb"=")
            if at is not None:
                self.add("arith", at, at + len(re.match(entry[0], self.src[at:]).group()), entry[1])
        self.delete(node)
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.USub):
            start = self.span(node)[0]
            self.add("arith", start, start + 1, b"")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            self.swap_token("compare", left, right, _COMPARE, op)
            left = right
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        for a, b in zip(node.values, node.values[1:]):
            self.swap_token("boolop", a, b, _BOOL, node.op)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self.number(node, "constant")

    def number(self, node: ast.AST, operator: str) -> None:
        if not isinstance(node, ast.Constant):
            if operator == "default":
                self.visit(node)
            return
        value = node.value
        start, end = self.span(node)
        if isinstance(value, bool):
            self.add(operator, start, end, repr(not value).encode())
        elif isinstance(value, (int, float)):
            for new in (value + 1, value - 1):
                self.add(operator, start, end, (repr(new) if new >= 0 else f"({new!r})").encode())

    def visit_Call(self, node: ast.Call) -> None:
        elements = sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))
        for i, kw in enumerate(elements):
            if not isinstance(kw, ast.keyword) or kw.arg is None:
                continue
            start, end = self.span(kw)
            if i > 0:
                start = self.span(elements[i - 1])[1]
            elif i + 1 < len(elements):
                end = self.span(elements[i + 1])[0]
            self.add("kwarg", start, end, b"")
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in _RANGES and node.args and not node.keywords:
            end_arg = node.args[1] if len(node.args) >= 2 else node.args[0]
            self.bound(end_arg)
        self.generic_visit(node)

    def visit_Slice(self, node: ast.Slice) -> None:
        for bound in (node.lower, node.upper):
            if bound is not None:
                self.bound(bound)
        self.generic_visit(node)

    def bound(self, node: ast.AST) -> None:
        self.wrap("boundary", node, b"(", b" + 1)")
        self.wrap("boundary", node, b"(", b" - 1)")

    def visit_If(self, node: ast.If) -> None:
        if not _is_main_guard(node):
            self.wrap("negate", node.test, b"not (", b")")
            self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self.wrap("negate", node.test, b"not (", b")")
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.wrap("negate", node.test, b"not (", b")")
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
            start, end = self.span(value)
            self.add("return", start, end, b"None")
        self.generic_visit(node)

    def delete(self, stmt: ast.stmt) -> None:
        start, end = self.span(stmt)
        self.add("delete", start, end, b"pass" + b"\n" * self.src[start:end].count(b"\n"))


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _describe(old: bytes, new: bytes) -> str:
    def short(b: bytes) -> str:
        text = " ".join(b.decode("utf-8", "replace").split())
        return text if len(text) <= 60 else text[:57] + "..."
    return f"{short(old) or '∅'} -> {short(new) or '∅'}"


def generate(source: str) -> list[Mutant]:
    """Every distinct mutant of ``source``, in source order."""
    src = source.encode("utf-8")
    tree = ast.parse(src)
    sites = _Sites(src)
    sites.visit(tree)
    seen = {ast.dump(tree)}
    out: list[Mutant] = []
    occurrences: dict[tuple[str, int, int], int] = {}
    for edit in sorted(sites.edits, key=lambda e: (e.start, e.end, OPERATORS.index(e.operator))):
        mutated = src[:edit.start] + edit.new + src[edit.end:]
        try:
            shape = ast.dump(ast.parse(mutated))
        except SyntaxError:
            continue
        if shape in seen:
            continue
        seen.add(shape)
        line = src.count(b"\n", 0, edit.start) + 1
        col = edit.start - sites.starts[line - 1]
        k = occurrences.get((edit.operator, line, col), 0)
        occurrences[(edit.operator, line, col)] = k + 1
        out.append(Mutant(id=f"{edit.operator}:{line}:{col}:{k}", operator=edit.operator, line=line, col=col,
                          change=_describe(src[edit.start:edit.end], edit.new), source=mutated.decode("utf-8")))
    return out
