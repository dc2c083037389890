"""Which parts of a reference solution the exercise's stub gives the student verbatim, so that
``infralab validate --mutate`` does not count a mutant of given code as a hole in the hidden tests:
a student never writes that code, so no student can get it wrong (a default of a signature the stub
declares, a field of a dataclass it defines, a module constant, a helper it implements in full).

Compared as syntax trees (:func:`ast.dump`, positions left out), so layout and comments do not matter:

- a statement at module or class level other than a definition (constants, dataclass fields) that the
  stub has at the same level of the same class;
- the defaults of a function whose parameters (names, annotations, defaults) equal those of the stub's
  function of the same qualified name;
- a whole function whose definition, body included, equals the stub's.

Function bodies the student writes (the stub's ``raise NotImplementedError``) never match.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache

Span = tuple[int, int, int, int]  # (line, col, end line, end col): lines 1-based, columns 0-based bytes
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _walk(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.stmt]]:
    """(scope, statement) for the statements at module level and in classes (not inside functions)."""
    for node in body:
        yield prefix, node
        if isinstance(node, ast.ClassDef):
            yield from _walk(node.body, f"{prefix}{node.name}.")


def _span(node: ast.AST) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)


@lru_cache(maxsize=64)
def given_spans(reference: str, stub: str) -> tuple[Span, ...]:
    """The spans of ``reference`` that ``stub`` gives verbatim (see the module docstring)."""
    try:
        ref_tree, stub_tree = ast.parse(reference), ast.parse(stub)
    except SyntaxError:
        return ()
    statements, signatures, functions = set(), {}, set()
    for scope, node in _walk(stub_tree.body):
        if isinstance(node, _DEFS):
            signatures[scope + node.name] = ast.dump(node.args)
            functions.add((scope, ast.dump(node)))
        elif not isinstance(node, ast.ClassDef):
            statements.add((scope, ast.dump(node)))
    spans: list[Span] = []
    for scope, node in _walk(ref_tree.body):
        if isinstance(node, _DEFS):
            if (scope, ast.dump(node)) in functions:
                spans.append(_span(node))
            elif signatures.get(scope + node.name) == ast.dump(node.args):
                defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
                spans += [_span(d) for d in defaults]
        elif not isinstance(node, ast.ClassDef) and (scope, ast.dump(node)) in statements:
            spans.append(_span(node))
    return tuple(spans)


def is_given(reference: str, stub: str, line: int, col: int) -> bool:
    """Whether the edit at (``line``, ``col``) of ``reference`` lies in code ``stub`` gives verbatim."""
    return any((start_line, start_col) <= (line, col) <= (end_line, end_col)
               for start_line, start_col, end_line, end_col in given_spans(reference, stub))
