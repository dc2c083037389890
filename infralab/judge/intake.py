"""Taking submissions in: which folders and zips are submissions, and which of their files count.

A submission is a folder or a ``.zip`` holding the student's ``exercises/`` tree, or just the
changed modules (``part01_transformer/rope.py``). A folder that holds neither an ``exercises/``
folder nor ``partNN_*`` folders is a class: each sub-folder or zip in it is one submission.

Only exercise modules (``partNN_*/name.py``, regular files, at most 1 MiB) are taken; anything
else (``conftest.py``, ``sitecustomize.py``, ``.pth`` files, ``__pycache__``, symbolic links,
zip entries with absolute or ``..`` paths) is listed as ignored, never copied.
"""
from __future__ import annotations

import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MODULE_FILE = re.compile(r"^part\d\d_[a-z0-9_]+/[a-z_][a-z0-9_]*\.py$")
PART_DIR = re.compile(r"^part\d\d_[a-z0-9_]+$")
IGNORED_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "__init__.py", "setup.py"}
MAX_MODULE_BYTES = 1 << 20
MAX_ZIP_ENTRIES = 2000


def why_ignored(rel: str, file: Path) -> str | None:
    """Why a submitted file is not taken, or None if it is an exercise module to copy."""
    if PurePosixPath(rel).name in IGNORED_NAMES:
        return "not an exercise module"
    if not MODULE_FILE.match(rel):
        return "not an exercise module (partNN_*/name.py)"
    if file.is_symlink():
        return "a symbolic link"
    if not file.is_file():
        return "not a regular file"
    if file.stat().st_size > MAX_MODULE_BYTES:
        return f"larger than {MAX_MODULE_BYTES} bytes"
    return None


@dataclass
class Submission:
    student: str  # from the folder or zip name
    source: Path
    staged: Path | None = None  # a clean folder with only the taken modules
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _looks_like_submission(folder: Path) -> bool:
    """A submission has an exercises/ or partNN_* folder, or nothing a class would hold."""
    children = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if (folder / "exercises").is_dir() or any(PART_DIR.match(p.name) for p in children if p.is_dir()):
        return True
    return not any(p.is_dir() or p.suffix == ".zip" for p in children)


def discover(paths: list[Path]) -> list[Submission]:
    """The submissions named by the command line (folders, zips, or class folders of those)."""
    found: list[Submission] = []
    for path in map(Path, paths):
        if path.suffix == ".zip" and path.is_file():
            found.append(Submission(path.stem, path))
        elif path.is_dir() and _looks_like_submission(path):
            found.append(Submission(path.name, path))
        elif path.is_dir():
            for child in sorted(path.iterdir()):
                if child.is_dir() and not child.name.startswith(".") or child.suffix == ".zip" and child.is_file():
                    found.append(Submission(child.stem if child.suffix == ".zip" else child.name, child))
        else:
            raise FileNotFoundError(f"{path}: not a submission folder, a .zip, or a class folder")
    seen: dict[str, int] = {}
    for sub in found:  # two students with the same name in different classes
        seen[sub.student] = seen.get(sub.student, 0) + 1
        if seen[sub.student] > 1:
            sub.student = f"{sub.student}-{seen[sub.student]}"
    return found


def _stage_folder(sub: Submission, dest: Path) -> None:
    tree = sub.source / "exercises" if (sub.source / "exercises").is_dir() else sub.source
    for file in sorted(tree.rglob("*")):
        if file.is_dir() and not file.is_symlink():
            continue
        rel = file.relative_to(tree).as_posix()
        why = why_ignored(rel, file)
        if why:
            sub.ignored.append(f"{rel}: {why}")
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, dest / rel, follow_symlinks=False)
        sub.taken.append(rel)


def _zip_rel(name: str, prefix: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name:
        return None
    rel = path.as_posix()
    return rel[len(prefix):] if prefix and rel.startswith(prefix) else rel


def _stage_zip(sub: Submission, dest: Path) -> None:
    with zipfile.ZipFile(sub.source) as zf:
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
                sub.ignored.append(f"{info.filename[:120]}: unsafe path in the zip")
                continue
            mode = info.external_attr >> 16
            why = None
            if stat.S_ISLNK(mode):
                why = "a symbolic link"
            elif PurePosixPath(rel).name in IGNORED_NAMES or not MODULE_FILE.match(rel):
                why = "not an exercise module (partNN_*/name.py)"
            elif info.file_size > MAX_MODULE_BYTES:
                why = f"larger than {MAX_MODULE_BYTES} bytes"
            if why:
                sub.ignored.append(f"{rel}: {why}")
                continue
            data = zf.read(info)[: MAX_MODULE_BYTES + 1]
            if len(data) > MAX_MODULE_BYTES:
                sub.ignored.append(f"{rel}: larger than {MAX_MODULE_BYTES} bytes")
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(data)
            sub.taken.append(rel)


def stage(sub: Submission, staging_root: Path) -> Submission:
    """Copy the submission's exercise modules into ``staging_root/<student>/exercises``."""
    dest = staging_root / sub.student / "exercises"
    dest.mkdir(parents=True)
    try:
        if sub.source.suffix == ".zip":
            _stage_zip(sub, dest)
        else:
            _stage_folder(sub, dest)
    except (zipfile.BadZipFile, OSError) as e:
        sub.ignored.append(f"(whole submission): unreadable: {type(e).__name__}: {e}")
    sub.staged = dest.parent
    return sub
