"""A notebook's answer cells <-> module source.

The secure grading path never runs a submitted notebook: it reads the student's code from the
answer cells (nbgrader ``solution`` cells), writes it as ``<part>/<exercise>.py`` and hands that
folder to the judge. IPython-only lines (``%magic``, ``!shell``) become comments. Code the
student put in cells of their own is not part of the answer (say so in the notebook).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from infralab.i18n import tr

_IPYTHON_LINE = re.compile(r"^\s*[%!]")


def is_answer_cell(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("solution")) and not meta.get("grade")


def answer_source(nb) -> str:
    """The student's code: every answer cell, in order, as one module."""
    chunks = []
    for cell in nb.cells:
        if is_answer_cell(cell):
            lines = [("# (IPython line left out) " + line) if _IPYTHON_LINE.match(line) else line
                     for line in cell.source.splitlines()]
            chunks.append("\n".join(lines))
    return "\n\n\n".join(chunks) + "\n"


def fill_answer(nb, code: str):
    """A copy of ``nb`` whose (first) answer cell holds ``code``; further answer cells are emptied."""
    nb = copy.deepcopy(nb)
    first = True
    for cell in nb.cells:
        if is_answer_cell(cell):
            cell.source = code if first else ""
            first = False
    if first:
        raise ValueError(tr("notebook.no_answer_cell"))
    return nb


def reference_answer(source_nb) -> str:
    """The instructor notebook's answer as plain code (its solution regions filled in)."""
    from infralab.nbgrader.source import strip_solution_markers
    return strip_solution_markers(next(c for c in source_nb.cells if is_answer_cell(c)).source)


def write_module(notebook: Path, tree: Path, module_path: Path) -> Path:
    """Extract ``notebook``'s answer into ``tree / module_path`` (e.g. part01_transformer/rmsnorm.py)."""
    nb = nbformat.read(notebook, as_version=4)
    out = Path(tree) / module_path
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(answer_source(nb), encoding="utf-8")
    return out
