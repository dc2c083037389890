"""Which statements of the reference the hidden tests execute, so that ``infralab validate --mutate``
can tell a survivor (a hole: the tests ran the mutated statement and did not notice) from a mutant
no hidden test reaches on this machine (a GPU-only branch, such as the autotuning configurations a
Triton kernel uses outside the CPU interpreter).

The mutation plugin traces the reference's own file while the reference's tests run
(:class:`LineTracer`); the driver then asks, per mutant, whether any line of the innermost statement
holding the edit ran (:func:`statement_lines`). A whole statement, not the edited line: a constant
folded into a multi-line literal runs under the literal's first line. Under the Triton interpreter a
``@triton.jit`` function runs as plain Python, so its body is traced like any function's.
"""
from __future__ import annotations

import ast
import sys
import threading
from functools import lru_cache
from pathlib import Path
from types import FrameType
from typing import Any


class LineTracer:
    """Records the line numbers executed in one file (every thread), until :meth:`stop`."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(Path(path).resolve())
        self.lines: set[int] = set()
        self._names: dict[str, bool] = {}  # co_filename -> is it our file (resolved once per name)

    def _ours(self, filename: str) -> bool:
        hit = self._names.get(filename)
        if hit is None:
            try:
                hit = self._names[filename] = str(Path(filename).resolve()) == self.path
            except (OSError, ValueError):
                hit = self._names[filename] = False
        return hit

    def _local(self, frame: FrameType, event: str, arg: Any):
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any):
        if event == "call" and self._ours(frame.f_code.co_filename):
            self.lines.add(frame.f_lineno)
            return self._local
        return None

    def start(self) -> None:
        threading.settrace(self._global)
        sys.settrace(self._global)

    def stop(self) -> list[int]:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        return sorted(self.lines)


@lru_cache(maxsize=8)
def _statement_spans(source: str) -> tuple[tuple[int, int, int], ...]:
    """(first line, last line, end column) of every statement, a decorated definition from its first
    decorator: parsed once per source, not once per mutant."""
    return tuple((min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]), n.end_lineno or n.lineno,
                  n.end_col_offset or 0) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt))


def statement_lines(source: str, line: int, col: int) -> range:
    """The lines of the innermost statement holding the edit at (``line``, ``col``); its decorators
    count as part of a decorated definition. The whole file when no statement holds it."""
    holding = [(start, end) for start, end, end_col in _statement_spans(source)
               if start <= line and (line, col) <= (end, end_col)]
    if not holding:
        return range(1, source.count("\n") + 2)
    start, end = min(holding, key=lambda span: span[1] - span[0])
    return range(start, end + 1)


def reached(source: str, line: int, col: int, executed: set[int]) -> bool:
    """Whether any line of the statement holding the edit ran."""
    return any(n in executed for n in statement_lines(source, line, col))
