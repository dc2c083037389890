"""Taking submissions in: which folders and zips are submissions, and which of their files count.

A submission is a folder or a ``.zip`` holding the student's ``exercises/`` tree, only the
changed modules (``part01_transformer/rope.py``), or flat files as Gradescope and LMS uploads
arrive (``rope.py``). A folder that holds neither an ``exercises/`` folder, ``partNN_*`` folders
nor loose files is a class: each sub-folder or zip in it is one submission. An empty class folder
is refused; a results folder (one holding the kit's ``gradebook.csv``, or the ``--out`` of this
run) is never taken as a submission.

Only the course's exercise modules (``partNN_*/name.py`` named in course.yml, regular files, at
most 1 MiB) are taken. A flat ``name.py`` is taken as ``partNN_*/name.py`` when exactly one part
of the course has that module; when several do, it is refused with a flag asking for the folder.
Everything else is listed as ignored, never copied; what could be code, or a module under a
wrong name, is also flagged so that no zero goes without its reason:

- ``misnamed-module``: ``part01_transformer/rms_norm.py`` (what was found, what was expected,
  the closest module name);
- ``ambiguous-module``: a flat ``rmsnorm.py`` when two parts have an ``rmsnorm``;
- ``unreadable-submission``: a corrupt zip, an unreadable folder (nothing is graded);
- ``empty-submission``: nothing in it at all (nothing is graded);
- ``ignored-file``: ``conftest.py``, ``sitecustomize.py``, ``.pth``, other ``.py``, symbolic
  links, zip entries with absolute or ``..`` paths.

The files the released tree ships (``__init__.py`` of the packages, the visible tests) are
listed but not flagged: the course's own copies are used.
"""
from __future__ import annotations

import difflib
import re
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from infralab.errors import InfralabError
from infralab.i18n import tr

MODULE_FILE = re.compile(r"^part\d\d_[a-z0-9_]+/[a-z_][a-z0-9_]*\.py$")
PART_DIR = re.compile(r"^part\d\d_[a-z0-9_]+$")
IGNORED_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "__init__.py", "setup.py"}
MAX_MODULE_BYTES = 1 << 20
MAX_ZIP_ENTRIES = 2000
RESULTS_MARKER = "gradebook.csv"  # a folder holding it is the kit's output, never a submission
CODE_SUFFIXES = (".py", ".pth", ".so", ".pyc")


def why_ignored(rel: str, file: Path) -> str | None:
    """Why a submitted file is not taken, or None if it is an exercise module to copy."""
    if PurePosixPath(rel).name in IGNORED_NAMES:
        return tr("intake.not_module")
    if not MODULE_FILE.match(rel):
        return tr("intake.not_module_pattern")
    if file.is_symlink():
        return tr("intake.symlink")
    if not file.is_file():
        return tr("intake.not_regular")
    if file.stat().st_size > MAX_MODULE_BYTES:
        return tr("intake.too_large", limit=MAX_MODULE_BYTES)
    return None


@dataclass
class Submission:
    student: str  # from the folder or zip name
    source: Path
    staged: Path | None = None  # a clean folder with only the taken modules
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    flags: list[dict] = field(default_factory=list)  # intake's findings, for the record
    notes: list[str] = field(default_factory=list)  # what intake did that the instructor should know
    unread: str | None = None  # why nothing could be graded (unreadable, empty), else None

    def flag(self, kind: str, detail: str) -> None:
        entry = {"kind": kind, "detail": detail, "source": "intake"}
        if entry not in self.flags:
            self.flags.append(entry)

    def report(self) -> dict[str, Any]:
        """What intake found, as plain data (travels to the grading task and into the record)."""
        return {"ignored_files": list(self.ignored), "flags": list(self.flags), "notes": list(self.notes),
                "unread": self.unread}


@dataclass(frozen=True)
class CourseModules:
    """The module files a submission may hold, and the files the released tree ships."""

    modules: frozenset[str]  # part01_transformer/rope.py
    shipped: frozenset[str]  # __init__.py files and visible tests, relative to exercises/

    @classmethod
    def of(cls, course: Any) -> "CourseModules":
        modules = {ex.module_path.as_posix() for ex in course.exercises}
        shipped = {"__init__.py"}
        for ex in course.exercises:
            shipped.add(f"{ex.part}/__init__.py")
            shipped.add(f"{ex.part}/tests/__init__.py")
            visible = PurePosixPath(ex.visible_tests.as_posix())
            if visible.parts[:1] == ("exercises",):
                shipped.add(PurePosixPath(*visible.parts[1:]).as_posix())
        return cls(frozenset(modules), frozenset(shipped))

    def parts(self) -> list[str]:
        return sorted({m.split("/")[0] for m in self.modules})

    def parts_having(self, filename: str) -> list[str]:
        return sorted(m.split("/")[0] for m in self.modules if m.split("/")[1] == filename)

    def names_in(self, part: str) -> list[str]:
        return sorted(m.split("/")[1] for m in self.modules if m.startswith(part + "/"))


def _did_you_mean(found: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(found, choices, n=1, cutoff=0.6)
    if close:
        return tr("intake.did_you_mean", name=close[0])
    return tr("intake.expected_one_of", names=", ".join(choices[:12]) + (", ..." if len(choices) > 12 else ""))


def _misnamed(rel: str, index: CourseModules) -> str:
    """What was found and what was expected, for a Python file that is not an exercise module."""
    path = PurePosixPath(rel)
    if len(path.parts) == 2 and path.parts[0] in index.parts():
        part, name = path.parts
        return tr("intake.misnamed", name=name, part=part, hint=_did_you_mean(name, index.names_in(part)))
    if len(path.parts) == 2 and PART_DIR.match(path.parts[0]):
        return tr("intake.unknown_part", part=path.parts[0], hint=_did_you_mean(path.parts[0], index.parts()))
    names = sorted({m.split("/")[1] for m in index.modules})
    return tr("intake.misnamed_anywhere", path=rel, hint=_did_you_mean(path.name, names))


# An entry of a submission: its path inside the tree, why it cannot be taken whatever its name
# (a link, too large, an unsafe zip path), and how to read its bytes.
Entry = tuple[str, "str | None", Callable[[], bytes]]


def _folder_entries(source: Path) -> Iterator[Entry]:
    tree = source / "exercises" if (source / "exercises").is_dir() else source
    for file in sorted(tree.rglob("*")):
        if file.is_dir() and not file.is_symlink():
            continue
        rel = file.relative_to(tree).as_posix()
        problem = None
        if file.is_symlink():
            problem = tr("intake.symlink")
        elif not file.is_file():
            problem = tr("intake.not_regular")
        elif file.stat().st_size > MAX_MODULE_BYTES:
            problem = tr("intake.too_large", limit=MAX_MODULE_BYTES)
        yield rel, problem, (lambda f=file: f.read_bytes())


def _zip_rel(name: str, prefix: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        return None
    rel = path.as_posix()
    return rel[len(prefix):] if prefix and rel.startswith(prefix) else rel


def _zip_entries(zf: zipfile.ZipFile) -> Iterator[Entry]:
    infos = [i for i in zf.infolist() if not i.is_dir()][:MAX_ZIP_ENTRIES]
    names = [i.filename for i in infos]
    prefix = ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names) and not PART_DIR.match(next(iter(tops))):
        prefix = next(iter(tops)) + "/"  # the student zipped their folder
    if any(n.startswith(prefix + "exercises/") for n in names):
        prefix += "exercises/"
    for info in infos:
        rel = _zip_rel(info.filename, prefix)
        if rel is None:
            yield info.filename[:120], tr("intake.unsafe_zip_path"), bytes
            continue
        problem = None
        if stat.S_ISLNK(info.external_attr >> 16):
            problem = tr("intake.symlink")
        elif info.file_size > MAX_MODULE_BYTES:
            problem = tr("intake.too_large", limit=MAX_MODULE_BYTES)
        yield rel, problem, (lambda i=info: zf.read(i)[: MAX_MODULE_BYTES + 1])


def _destination(sub: Submission, rel: str, index: CourseModules) -> str | None:
    """Where ``rel`` goes in the staged tree, or None (then ``sub`` says why)."""
    name = PurePosixPath(rel).name
    if rel in index.modules:
        return rel
    if rel in index.shipped or (name == "__init__.py" and PART_DIR.match(rel.split("/")[0])):
        sub.ignored.append(f"{rel}: {tr('intake.shipped')}")
        return None
    if "/" not in rel and rel.endswith(".py") and name not in IGNORED_NAMES:
        parts = index.parts_having(name)
        if len(parts) == 1:
            sub.notes.append(tr("intake.flat_taken", name=name, rel=f"{parts[0]}/{name}"))
            return f"{parts[0]}/{name}"
        if len(parts) > 1:
            detail = tr("intake.ambiguous", name=name, parts=", ".join(parts), example=f"{parts[0]}/{name}")
            sub.ignored.append(f"{rel}: {detail}")
            sub.flag("ambiguous-module", detail)
            return None
    if rel.endswith(".py") and name not in IGNORED_NAMES and "/tests/" not in f"/{rel}":
        detail = _misnamed(rel, index)
        sub.ignored.append(f"{rel}: {detail}")
        sub.flag("misnamed-module", detail)
        return None
    why = tr("intake.not_module") if name in IGNORED_NAMES else tr("intake.not_module_pattern")
    sub.ignored.append(f"{rel}: {why}")
    if rel.endswith(CODE_SUFFIXES):
        sub.flag("ignored-file", f"{rel}: {why}")
    return None


def _take(sub: Submission, entries: Iterator[Entry], dest: Path, index: CourseModules) -> None:
    seen = False
    for rel, problem, read in entries:
        seen = True
        if problem:
            sub.ignored.append(f"{rel}: {problem}")
            sub.flag("ignored-file", f"{rel}: {problem}")
            continue
        target = _destination(sub, rel, index)
        if target is None:
            continue
        if target in sub.taken:
            sub.ignored.append(f"{rel}: {tr('intake.duplicate', rel=target)}")
            continue
        data = read()
        if len(data) > MAX_MODULE_BYTES:
            sub.ignored.append(f"{rel}: {tr('intake.too_large', limit=MAX_MODULE_BYTES)}")
            continue
        (dest / target).parent.mkdir(parents=True, exist_ok=True)
        (dest / target).write_bytes(data)
        sub.taken.append(target)
    if not seen:
        sub.unread = tr("intake.empty", source=sub.source.name)
        sub.flag("empty-submission", sub.unread)


def stage(sub: Submission, staging_root: Path, course: Any) -> Submission:
    """Copy the submission's exercise modules into ``staging_root/<student>/exercises``."""
    dest = staging_root / sub.student / "exercises"
    dest.mkdir(parents=True)
    index = CourseModules.of(course)
    try:
        if sub.source.suffix == ".zip":
            with zipfile.ZipFile(sub.source) as zf:
                _take(sub, _zip_entries(zf), dest, index)
        else:
            _take(sub, _folder_entries(sub.source), dest, index)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError) as e:
        sub.unread = tr("intake.unreadable", source=sub.source.name, error=f"{type(e).__name__}: {e}")
        sub.ignored.append(f"(whole submission): {sub.unread}")
        sub.flag("unreadable-submission", sub.unread)
    sub.staged = dest.parent
    return sub


def is_results_folder(folder: Path) -> bool:
    """A folder the kit wrote grades into (``infralab grade --out``)."""
    return (folder / RESULTS_MARKER).is_file()


def _looks_like_submission(folder: Path, children: list[Path]) -> bool:
    """A submission has an exercises/ or partNN_* folder, or loose files and no sub-folders or zips."""
    if (folder / "exercises").is_dir() or any(PART_DIR.match(p.name) for p in children if p.is_dir()):
        return True
    return not any(p.is_dir() or p.suffix == ".zip" for p in children)


def discover(paths: list[Path], exclude: Path | None = None, skipped: list[str] | None = None) -> list[Submission]:
    """The submissions named by the command line (folders, zips, or class folders of those).

    ``exclude`` (the results folder) and any folder holding the kit's gradebook are never taken;
    each one passed over is described in ``skipped``. An empty folder is refused.
    """
    skipped = skipped if skipped is not None else []
    excluded = Path(exclude).resolve() if exclude is not None else None

    def passed_over(p: Path) -> bool:
        if p.is_dir() and (p.resolve() == excluded or is_results_folder(p)):
            skipped.append(tr("intake.skipped_results", path=p))
            return True
        return False

    found: list[Submission] = []
    for path in map(Path, paths):
        if path.suffix == ".zip" and path.is_file():
            found.append(Submission(path.stem, path))
            continue
        if not path.is_dir():
            raise InfralabError(tr("intake.not_submission", path=path))
        if passed_over(path):
            continue
        children = sorted(p for p in path.iterdir() if not p.name.startswith("."))
        if not children:
            raise InfralabError(tr("intake.empty_folder", path=path))
        if _looks_like_submission(path, children):
            found.append(Submission(path.name, path))
            continue
        for child in children:
            if child.is_dir() and not passed_over(child) or child.suffix == ".zip" and child.is_file():
                found.append(Submission(child.stem if child.suffix == ".zip" else child.name, child))
    seen: dict[str, int] = {}
    for sub in found:  # two students with the same name in different classes
        seen[sub.student] = seen.get(sub.student, 0) + 1
        if seen[sub.student] > 1:
            sub.student = f"{sub.student}-{seen[sub.student]}"
    return found

