"""A pytest test file split for notebook cells: its preamble and one piece per test function.

The preamble is everything that is not a test function (docstring, imports, constants,
reference helpers); each test keeps its decorators. Weights come from
``@pytest.mark.weight(n)``, one per test function: a parametrized function's cases share it
(:func:`infralab.record.score_tests`).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from infralab.errors import InfralabError
from infralab.i18n import tr

# The fixtures a notebook cell provides (infralab.nbgrader.notebook._fixtures).
NOTEBOOK_FIXTURES = frozenset({"impl", "seed", "gen", "tmp_path", "golden"})


class TestSourceError(InfralabError, ValueError):
    """A test file that cannot run in a notebook cell (a test class, an unknown fixture)."""


@dataclass(frozen=True)
class TestPiece:
    name: str
    source: str
    weight: float


@dataclass(frozen=True)
class TestFile:
    path: Path
    preamble: str
    tests: tuple[TestPiece, ...]


def _mark(decorator: ast.expr, name: str) -> ast.Call | ast.Attribute | None:
    """The ``pytest.mark.<name>`` decorator node (called or bare), if it is one."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute) and target.attr == name:
        inner = target.value
        if isinstance(inner, ast.Attribute) and inner.attr == "mark":
            return decorator
    return None


def _weight(node: ast.FunctionDef) -> float:
    for d in node.decorator_list:
        w = _mark(d, "weight")
        if isinstance(w, ast.Call) and w.args and isinstance(w.args[0], ast.Constant):
            return float(w.args[0].value)
    return 1.0


def _parametrized_names(node: ast.FunctionDef) -> set[str]:
    names: set[str] = set()
    for d in node.decorator_list:
        p = _mark(d, "parametrize")
        if isinstance(p, ast.Call) and p.args and isinstance(p.args[0], ast.Constant):
            names |= {s.strip() for s in str(p.args[0].value).split(",")}
    return names


def _given_names(node: ast.FunctionDef) -> set[str]:
    """The arguments hypothesis fills: ``@given(x=...)`` by name, ``@given(s1, s2)`` the rightmost ones."""
    names: set[str] = set()
    params = [a.arg for a in node.args.args]
    for d in node.decorator_list:
        if isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", None)) == "given":
            names |= {k.arg for k in d.keywords if k.arg}
            if d.args:
                names |= set(params[-len(d.args):])
    return names


def read_test_file(path: Path) -> TestFile:
    """Split ``path``; raises TestSourceError for what a notebook cell cannot run."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    tests, test_lines = [], set()
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        segment = "\n".join(lines[first - 1:node.end_lineno])
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            raise TestSourceError(tr("notebook.test_class", path=path, name=node.name))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            args = {a.arg for a in node.args.args + node.args.kwonlyargs}
            unknown = args - NOTEBOOK_FIXTURES - _parametrized_names(node) - _given_names(node)
            if unknown:
                raise TestSourceError(tr("notebook.unknown_fixtures", path=path, name=node.name,
                                         unknown=sorted(unknown), known=sorted(NOTEBOOK_FIXTURES)))
            tests.append(TestPiece(node.name, segment, _weight(node)))
            test_lines.update(range(first, node.end_lineno + 1))
    kept = "\n".join(line for i, line in enumerate(lines, 1) if i not in test_lines)
    preamble = re.sub(r"\n{3,}", "\n\n\n", kept).strip()
    return TestFile(Path(path), preamble, tuple(tests))
