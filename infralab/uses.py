"""Exercises built on exercises: a capstone's ``uses:`` and its two runs.

A capstone (the serving engine) imports the modules of other exercises relatively inside the
course package (``from ..part01_transformer import llama``), so whatever tree a target builds,
the capstone runs on that tree's parts. course.yml names them::

    - id: engine
      points: 40
      uses: [part01_transformer.llama, part04_serving.paged_kv]
      reference_parts_points: 20      # of the 40; default half; 0: no run with the reference parts

A capstone is graded twice (``PARTS``): with the student's own parts, and with the reference
parts, i.e. the same target with exactly the ``uses`` modules replaced by solutions/ files
(:func:`reference_parts_spec`). The two runs are credited separately (the record's score lines,
:func:`score_lines`), so one bug upstream costs the own-parts line only. A course that keeps
those solutions secret turns the second run off with course.yml ``reference_parts: false``
(docs/grading.md: in that run the student's process can read the reference modules it uses).
"""
from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infralab.errors import InfralabError
from infralab.i18n import tr

if TYPE_CHECKING:  # the outputs read this module's labels without loading the targets (and torch)
    from infralab.targets import TargetSpec

PARTS = ("own", "reference")  # the two runs of a capstone: --parts own | reference
REFERENCE_SUFFIX = "#reference-parts"  # appended to a target's name for its reference-parts variant


# -- course.yml --------------------------------------------------------------------------------
def read_uses(root: Path, parts: list, capstones: list, reference_parts: bool, check_imports: bool,
              bundle: bool = False) -> list:
    """The course's parts with each capstone's ``uses`` and ``reference_parts_points`` filled in.

    ``capstones``: (exercise, its course.yml reader) of every exercise that says ``uses:`` or
    ``reference_parts_points:``. Every broken value is one :class:`CourseError` naming course.yml,
    the key and what was expected: an id that is not an exercise of the course, the capstone
    itself, an id twice, a cycle, points out of range, and (where solutions/ is there) a module
    the references import relatively that ``uses`` does not list. In a Gradescope bundle (``bundle``)
    a used exercise may be left out of the course (only its stub and reference module ship).
    """
    ids = [ex.id for part in parts for ex in part.exercises]
    if bundle:
        ids += sorted(f"{f.parent.name}.{f.stem}" for f in (root / "exercises").glob("part*/*.py")
                      if f.name != "__init__.py")
    filled: dict[str, Any] = {}
    for ex, r in capstones:
        uses_reader = r.get("uses", [])
        uses: list[str] = []
        for item in uses_reader.list():
            value = item.str()
            if value not in ids:
                close = difflib.get_close_matches(value, ids, n=1, cutoff=0.6)
                hint = tr("uses.did_you_mean", name=close[0]) if close else ""
                raise item.error(tr("uses.expected_exercise_id", hint=hint), value)
            if value == ex.id:
                raise item.error(tr("uses.expected_not_itself", exercise=ex.id), value)
            if value in uses:
                raise item.error(tr("uses.expected_once"), value)
            uses.append(value)
        if not uses:
            raise uses_reader.error(tr("uses.expected_list"), uses_reader.data)
        points_reader = r.get("reference_parts_points", ex.points / 2 if reference_parts else 0.0)
        share = points_reader.number(0.0)
        if share > ex.points:
            raise points_reader.error(tr("uses.expected_share", points=f"{ex.points:g}"), points_reader.data)
        if share > 0 and not reference_parts:
            raise points_reader.error(tr("uses.expected_no_share"), points_reader.data)
        filled[ex.id] = (tuple(uses), share, uses_reader)
    _check_cycles(filled)
    if check_imports:
        for ex, r in capstones:
            _check_imports(root, ex.id, ex.part, filled[ex.id][0], filled[ex.id][2])
    return [replace(part, exercises=tuple(
        replace(ex, uses=filled[ex.id][0], reference_parts_points=filled[ex.id][1]) if ex.id in filled else ex
        for ex in part.exercises)) for part in parts]


def _check_cycles(filled: dict[str, Any]) -> None:
    """No capstone uses itself through others (``a`` uses ``b`` uses ``a``)."""
    def walk(node: str, path: list[str]) -> None:
        for nxt in filled.get(node, ((),))[0]:
            if nxt == path[0]:
                reader = filled[path[0]][2]
                raise reader.error(tr("uses.expected_no_cycle", cycle=" -> ".join([*path, nxt])), list(filled[path[0]][0]))
            if nxt not in path:
                walk(nxt, [*path, nxt])

    for start in filled:
        walk(start, [start])


def relative_course_imports(file: Path, module_id: str) -> set[str]:
    """The course modules (``part01_transformer.llama``) that ``file``, the module ``module_id`` of a
    target tree, imports relatively: ``from ..part01_transformer import llama``, ``from . import rope``,
    ``from .rope import apply_rope``."""
    tree = ast.parse(Path(file).read_text(encoding="utf-8"), filename=str(file))
    package = module_id.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = package[:len(package) - (node.level - 1)] if node.level - 1 <= len(package) else None
        if base is None:
            continue
        path = base + (node.module.split(".") if node.module else [])
        if len(path) >= 2:
            found.add(".".join(path[:2]))
        elif len(path) == 1:
            found.update(f"{path[0]}.{alias.name}" for alias in node.names)
    return found


def _check_imports(root: Path, capstone: str, part: str, uses: tuple[str, ...], reader: Any) -> None:
    """The capstone's reference imports only the course modules ``uses`` lists (else the own/reference
    runs would not swap what it runs on), and so does the reference of each module it uses (else the
    reference-parts run would mix a reference with a student's module)."""
    for module in (capstone, *uses):
        file = root / "solutions" / Path(*module.split(".")).with_suffix(".py")
        if not file.is_file():
            continue
        extra = sorted(relative_course_imports(file, module) - set(uses) - {module, capstone})
        if extra:
            raise reader.error(tr("uses.expected_imports_listed", file=f"solutions/{module.replace('.', '/')}.py",
                                  modules=", ".join(extra)), list(uses))


# -- targets -----------------------------------------------------------------------------------
def reference_module(root: Path, module: str) -> Path:
    """solutions/<part>/<module>.py; a missing one is an :class:`InfralabError` saying where it looked."""
    file = Path(root) / "solutions" / Path(*module.split(".")).with_suffix(".py")
    if not file.is_file():
        raise InfralabError(tr("uses.no_reference", module=module, file=file))
    return file


def reference_parts_spec(spec: TargetSpec, uses: tuple[str, ...], root: Path) -> TargetSpec:
    """``spec`` with exactly the ``uses`` modules taken from solutions/: the capstone and every other
    module stay the target's own. Nothing else of solutions/ enters it."""
    reference = {module: reference_module(root, module) for module in uses}
    return replace(spec, name=spec.name + REFERENCE_SUFFIX, reference=reference)


def whose(spec: TargetSpec, module: str) -> str:
    """Whose ``module`` is in ``spec``'s tree: ``student`` (submitted, or the student's own working copy),
    ``reference`` (solutions/), or ``stub`` (the course's stub: a submission without that module)."""
    if module in spec.reference:
        return "reference"
    if module in spec.overlays:
        return "student" if spec.kind == "submission" else spec.kind
    if spec.kind in ("solutions", "mutant", "stub"):  # their base is solutions/
        return "reference"
    return "student" if spec.kind == "exercises" else "stub"


def whose_parts(spec: TargetSpec, uses: tuple[str, ...]) -> dict[str, str]:
    """{module: whose} for the parts a capstone uses, as they were in ``spec``'s tree."""
    return {module: whose(spec, module) for module in uses}


def parts_option(value: str) -> str:
    """The pytest ``--parts`` value, checked."""
    if value not in PARTS:
        raise InfralabError(tr("uses.bad_parts_option", value=value, choices=", ".join(PARTS)))
    return value


# -- the record --------------------------------------------------------------------------------
def with_reference_parts(course: Any, run: Any, own: dict[str, Any], judge: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """A grading's record: ``own`` (every exercise of ``run`` on the student's parts) and, for the capstones
    among them with a reference-parts run, ``judge`` of the same run with ``--parts reference`` on those
    capstones only, merged (:func:`merge_runs`). A failed second run scores 0 on its lines, with a flag."""
    capstones = tuple(ex for ex in run.exercises if ex.uses and ex.reference_parts_points > 0)
    if not capstones:
        return own
    again = replace(run, exercises=capstones, extra_args=[*run.extra_args, "--parts", "reference"])
    try:
        reference = judge(again)
    except Exception as e:  # noqa: BLE001 - fail closed: the lost run's lines score 0, the other run stands
        reference = {"exercises": [], "flags": [{"kind": "grading-error", "source": "judge", "detail":
                                                 tr("uses.reference_run_failed", error=f"{type(e).__name__}: {e}")}]}
    return merge_runs(course, own, reference, [ex.id for ex in run.exercises])


def merge_runs(course: Any, own: dict[str, Any], reference: dict[str, Any], exercise_ids: list[str]) -> dict[str, Any]:
    """One record from a grading's two runs: every exercise's tests on the student's parts (``own``)
    and the capstones' tests on the reference parts (``reference``), scored together, so each
    capstone has its two score lines (:func:`infralab.record.score_lines`)."""
    from infralab.record import TestResult, build_record

    known = set(TestResult.__dataclass_fields__)
    tests = [TestResult(**{k: v for k, v in t.items() if k in known})
             for record in (own, reference) for ex in record["exercises"] for t in ex["tests"]]
    whose: dict[str, dict[str, dict[str, str]]] = {}
    for record in (own, reference):
        for ex in record["exercises"]:
            for line in ex.get("lines", []):
                whose.setdefault(ex["id"], {})[line["parts"]] = line["whose"]
    protections = dict(own.get("protections") or {})
    notes = [*protections.get("notes", []), *(reference.get("protections") or {}).get("notes", [])]
    protections["notes"] = list(dict.fromkeys(notes))
    merged = build_record(course, own["target"], own["mode"], tests, started=own["started"],
                          duration_s=own.get("duration_s", 0.0) + reference.get("duration_s", 0.0),
                          exercise_ids=exercise_ids, perf=[*own.get("perf", []), *reference.get("perf", [])],
                          flags=[*own.get("flags", []), *(f for f in reference.get("flags", []) if f not in own.get("flags", []))],
                          protections=protections, whose=whose, both_runs=True)
    return {**own, **merged}


def line_text(exercise: str, line: dict[str, Any]) -> str:
    """A capstone's score line for people: ``engine with reference parts: 20/20 (llama: reference, ...)``."""
    whose = ", ".join(f"{module.rsplit('.', 1)[-1]}: {tr('uses.whose_' + who)}" for module, who in line["whose"].items())
    return tr("uses.line", exercise=exercise, parts=tr("uses.parts_" + line["parts"]),
              points=f"{line['points']:g}", max_points=f"{line['max_points']:g}", whose=whose or "-")


def run_label(test: dict[str, Any]) -> str:
    """``[reference parts] `` before a capstone's test name (``[own parts] ``), nothing for other tests."""
    return f"[{tr('uses.parts_' + test['parts'])}] " if test.get("parts") else ""
