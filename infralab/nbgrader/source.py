"""From a stub and its solution to a notebook's answer cell and specification.

The answer cell keeps the stub's text (imports, signatures, docstrings) and puts the
solution's bodies between nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION``, so the
student version (nbgrader replaces each region with ``raise NotImplementedError()``) still
carries the specification. Code the solution has and the stub lacks (helpers, constants)
goes in a region inside ``try: ... except NotImplementedError: pass``, so that the student
version of the region raises harmlessly at module or class level.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from infralab.i18n import tr

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class SourceError(ValueError):
    """A stub or solution this exporter cannot turn into a notebook cell."""


@dataclass(frozen=True)
class Spec:
    """What the notebook shows as markdown: the module docstring and each public definition's."""

    module_doc: str
    definitions: tuple[tuple[str, str, str], ...]  # (name, signature line(s), docstring)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _segment(lines: list[str], node: ast.AST) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1:node.end_lineno])


def _docstring_node(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0]
    return None


def _header(lines: list[str], node: ast.AST) -> str:
    """Decorators, ``def``/``class`` line(s) and docstring of a definition, as written."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    doc = _docstring_node(node)
    last = doc.end_lineno if doc is not None else node.body[0].lineno - 1
    return "\n".join(lines[first - 1:last])


def _body(lines: list[str], node: ast.AST) -> tuple[str, str]:
    """A function's body without its docstring, and its indentation."""
    stmts = node.body[1:] if _docstring_node(node) is not None else node.body
    if not stmts:
        raise SourceError(tr("notebook.empty_body", name=node.name))
    start = (node.body[0].end_lineno + 1) if _docstring_node(node) is not None else stmts[0].lineno
    text = lines[start - 1:node.end_lineno]
    while text and not text[0].strip():
        text.pop(0)
    first = lines[stmts[0].lineno - 1]
    return "\n".join(text), first[: len(first) - len(first.lstrip())]


def _region(code: str, indent: str) -> str:
    return f"{indent}{BEGIN}\n{code}\n{indent}{END}"


def _helpers_region(code: str, indent: str) -> str:
    """Solution-only code in a region whose student version (a raise) is caught."""
    inner = indent + "    "
    shifted = "\n".join((inner + line[len(indent):]) if line.strip() else "" for line in code.splitlines())
    return (f"{indent}try:  # your own helpers (optional) go inside this block\n"
            f"{_region(shifted, inner)}\n"
            f"{indent}except NotImplementedError:\n{indent}    pass")


def _normalized(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def _merge_function(stub_lines, stub_node, sol_lines, sol_node) -> str:
    body, indent = _body(sol_lines, sol_node)
    return _header(stub_lines, stub_node) + "\n" + _region(body, indent)


def _merge_class(stub_lines, stub_node: ast.ClassDef, sol_lines, sol_node: ast.ClassDef) -> str:
    sol_members = {n.name: n for n in sol_node.body if isinstance(n, _DEFS)}
    stub_doc = _docstring_node(stub_node)
    parts = [_header(stub_lines, stub_node)]
    stub_members = [n for n in stub_node.body if n is not stub_doc]
    stub_names = set()
    stub_dumps = set()
    for member in stub_members:
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stub_names.add(member.name)
            if member.name not in sol_members:
                raise SourceError(tr("notebook.solution_method_missing", cls=stub_node.name, method=member.name))
            parts.append("\n" + _merge_function(stub_lines, member, sol_lines, sol_members[member.name]))
        else:  # class attributes, annotations: the stub's text
            stub_dumps.add(_normalized(member))
            parts.append(_segment(stub_lines, member))
    sol_doc = _docstring_node(sol_node)
    extras = [n for n in sol_node.body if n is not sol_doc and getattr(n, "name", None) not in stub_names
              and _normalized(n) not in stub_dumps]
    if extras:
        indent = " " * extras[0].col_offset
        code = "\n\n".join(_segment(sol_lines, n) for n in extras)
        parts.append("\n" + _helpers_region(code, indent))
    return "\n".join(parts)


def answer_cell(stub_text: str, solution_text: str | None) -> str:
    """The source of the notebook's answer cell.

    With ``solution_text`` None (a student export, no solutions at hand) the cell is the stub
    itself minus its module docstring.
    """
    stub_lines = _lines(stub_text)
    stub = ast.parse(stub_text)
    doc = _docstring_node(stub)
    stub_stmts = [n for n in stub.body if n is not doc]
    if solution_text is None:
        return "\n".join(stub_lines[stub_stmts[0].lineno - 1:]).strip() + "\n" if stub_stmts else ""
    sol_lines = _lines(solution_text)
    sol = ast.parse(solution_text)
    sol_defs = {n.name: n for n in sol.body if isinstance(n, _DEFS)}
    stub_dumps = {_normalized(n) for n in stub_stmts if not isinstance(n, _DEFS)}
    stub_def_names = {n.name for n in stub_stmts if isinstance(n, _DEFS)}

    future = [n for n in stub_stmts if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    prelude = [n for n in stub_stmts if not isinstance(n, _DEFS) and n not in future]
    sol_doc = _docstring_node(sol)
    extra_imports, extra_code = [], []
    for n in sol.body:
        if n is sol_doc or isinstance(n, ast.ImportFrom) and n.module == "__future__":
            continue
        if isinstance(n, _DEFS) and n.name in stub_def_names or _normalized(n) in stub_dumps:
            continue
        (extra_imports if isinstance(n, (ast.Import, ast.ImportFrom)) else extra_code).append(n)

    blocks = []
    head = [_segment(stub_lines, n) for n in future]
    head += [_segment(stub_lines, n) for n in prelude if isinstance(n, (ast.Import, ast.ImportFrom))]
    head += [_segment(sol_lines, n) for n in extra_imports]  # imports reveal nothing
    if head:
        blocks.append("\n".join(head))
    others = [_segment(stub_lines, n) for n in prelude if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if others:
        blocks.append("\n".join(others))
    if extra_code:
        blocks.append(_helpers_region("\n\n".join(_segment(sol_lines, n) for n in extra_code), ""))
    for node in stub_stmts:
        if not isinstance(node, _DEFS):
            continue
        if node.name not in sol_defs:
            raise SourceError(tr("notebook.solution_missing", name=node.name))
        if isinstance(node, ast.ClassDef):
            blocks.append(_merge_class(stub_lines, node, sol_lines, sol_defs[node.name]))
        else:
            blocks.append(_merge_function(stub_lines, node, sol_lines, sol_defs[node.name]))
    return "\n\n\n".join(b.rstrip() for b in blocks) + "\n"


def strip_solution_markers(cell_source: str) -> str:
    """The instructor's answer cell as plain code (the region markers removed)."""
    return "\n".join(line for line in cell_source.splitlines() if line.strip() not in (BEGIN, END)) + "\n"


def specification(stub_text: str) -> Spec:
    stub = ast.parse(stub_text)
    lines = _lines(stub_text)
    defs = []
    for node in stub.body:
        if isinstance(node, _DEFS) and not node.name.startswith("_"):
            doc = ast.get_docstring(node) or ""
            header = _header(lines, node)
            signature = header[: header.index('"""')].rstrip() if '"""' in header else header
            defs.append((node.name, "\n".join(l.strip() for l in signature.splitlines()), doc))
    return Spec(module_doc=ast.get_docstring(stub) or "", definitions=tuple(defs))


def rst_to_markdown(text: str) -> str:
    """The docstrings' reST literals (````x````) as markdown code (```x```)."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)
