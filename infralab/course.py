"""course.yml: the course model, loaded and validated into typed objects.

The file names parts and their exercises. For each exercise it gives the module (the same
relative path under exercises/ and solutions/), its public names, its points, its tests
(visible under exercises/, hidden under graders/), its textbook section, and optionally
performance challenges. Anything off fails with the file, the key path and what was expected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infralab.errors import CourseError
from infralab.i18n import LANGS

COURSE_FILE = "course.yml"
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Title:
    en: str
    zh: str


@dataclass(frozen=True)
class Exercise:
    """One exercise: a module students implement, with its tests and points."""

    part: str
    name: str
    title: Title
    public: tuple[str, ...]
    points: float
    textbook: str
    visible_tests: Path  # relative to the course root
    hidden_tests: Path
    mutants_dir: Path
    requires: tuple[str, ...] = ()  # e.g. ("triton",), ("gpu",)
    perf: tuple[dict[str, Any], ...] = ()
    banned: tuple[str, ...] = ()  # torch routines the implementation may not call (see guards.py)
    triton: bool = False  # every call must launch a @triton.jit kernel (see guards.py)

    @property
    def id(self) -> str:
        """Course-wide id, also the module's dotted name: ``part01_transformer.rope``."""
        return f"{self.part}.{self.name}"

    @property
    def module_path(self) -> Path:
        """The module file relative to a target tree: ``part01_transformer/rope.py``."""
        return Path(self.part) / f"{self.name}.py"


@dataclass(frozen=True)
class Part:
    id: str
    title: Title
    exercises: tuple[Exercise, ...]


@dataclass(frozen=True)
class Course:
    root: Path
    id: str
    title: Title
    parts: tuple[Part, ...]
    profiles_dir: Path = field(default=Path("hardware_profiles"))
    language: str | None = None  # course.yml `language:` (en|zh): the default of every message (infralab.i18n)

    @property
    def exercises(self) -> tuple[Exercise, ...]:
        return tuple(ex for part in self.parts for ex in part.exercises)

    def exercise(self, exercise_id: str) -> Exercise:
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise KeyError(exercise_id)

    def select(self, parts: list[str] | None = None, exercises: list[str] | None = None) -> tuple[Exercise, ...]:
        """Exercises filtered by part ids and by exercise ids (``rope`` or ``part01_transformer.rope``)."""
        chosen = []
        for ex in self.exercises:
            if parts and ex.part not in parts:
                continue
            if exercises and ex.id not in exercises and ex.name not in exercises:
                continue
            chosen.append(ex)
        return tuple(chosen)

    def exercise_for_test_file(self, path: Path) -> tuple[Exercise, str] | None:
        """Which exercise a test file belongs to, and whether it is 'visible' or 'hidden'."""
        path = Path(path).resolve()
        for ex in self.exercises:
            if path == (self.root / ex.visible_tests).resolve():
                return ex, "visible"
            if path == (self.root / ex.hidden_tests).resolve():
                return ex, "hidden"
        return None


class _Reader:
    """Walks a YAML mapping, keeping the key path for error messages."""

    def __init__(self, file: Path, data: Any, key: str = ""):
        self.file, self.data, self.key = file, data, key

    def error(self, expected: str, got: object = None, key: str | None = None) -> CourseError:
        return CourseError(self.file, self.key if key is None else key, expected, got)

    def mapping(self, allowed: set[str], required: set[str]) -> "_Reader":
        if not isinstance(self.data, dict):
            raise self.error("a mapping", type(self.data).__name__)
        for k in self.data:
            if k not in allowed:
                raise self.error(f"one of {sorted(allowed)}", k, key=self._join(str(k)))
        for k in sorted(required):
            if k not in self.data:
                raise self.error("this key to be present", key=self._join(k))
        return self

    def _join(self, k: str) -> str:
        return f"{self.key}.{k}" if self.key else k

    def get(self, k: str, default: Any = None) -> "_Reader":
        return _Reader(self.file, self.data.get(k, default), self._join(k))

    def at(self, i: int) -> "_Reader":
        return _Reader(self.file, self.data[i], f"{self.key}[{i}]")

    def str(self) -> str:
        if not isinstance(self.data, str) or not self.data.strip():
            raise self.error("a non-empty string", self.data)
        return self.data

    def ident(self) -> str:
        s = self.str()
        if not _ID.match(s):
            raise self.error("a lower-case identifier (letters, digits, _)", s)
        return s

    def number(self, minimum: float = 0.0) -> float:
        if isinstance(self.data, bool) or not isinstance(self.data, (int, float)) or self.data < minimum:
            raise self.error(f"a number >= {minimum:g}", self.data)
        return float(self.data)

    def bool(self) -> bool:
        if not isinstance(self.data, bool):
            raise self.error("true or false", self.data)
        return self.data

    def list(self) -> list["_Reader"]:
        if not isinstance(self.data, list):
            raise self.error("a list", type(self.data).__name__)
        return [self.at(i) for i in range(len(self.data))]

    def title(self) -> Title:
        self.mapping({"en", "zh"}, {"en", "zh"})
        return Title(en=self.get("en").str(), zh=self.get("zh").str())


_EXERCISE_KEYS = {"id", "title", "public", "points", "textbook", "tests", "mutants", "requires", "perf", "banned",
                  "triton"}
_REQUIRES = {"triton", "gpu", "distributed"}


def _exercise(root: Path, part: str, r: _Reader, profiles: set[str], release: bool = False,
              solutions: bool = True) -> Exercise:
    r.mapping(_EXERCISE_KEYS, {"id", "title", "public", "points", "textbook"})
    name = r.get("id").ident()
    public = tuple(p.str() for p in r.get("public", []).list())
    if not public:
        raise r.get("public").error("a non-empty list of public names")
    tests = r.get("tests", {})
    tests.mapping({"visible", "hidden"}, set())
    visible = Path(tests.get("visible", f"exercises/{part}/tests/test_{name}.py").str())
    hidden = Path(tests.get("hidden", f"graders/{part}/test_{name}.py").str())
    mutants = Path(r.get("mutants", f"fixtures/mutants/{part}/{name}").str())
    requires = tuple(x.str() for x in r.get("requires", []).list())
    for i, req in enumerate(requires):
        if req not in _REQUIRES:
            raise r.get("requires").at(i).error(f"one of {sorted(_REQUIRES)}", req)
    perf = []
    for p in r.get("perf", []).list():
        perf.append(_perf_challenge(p, profiles))
    ex = Exercise(
        part=part, name=name, title=r.get("title").title(), public=public,
        points=r.get("points").number(0.0), textbook=r.get("textbook").str(),
        visible_tests=visible, hidden_tests=hidden, mutants_dir=mutants,
        requires=requires, perf=tuple(perf),
        banned=tuple(b.ident() for b in r.get("banned", []).list()),
        triton=r.get("triton", False).bool(),
    )
    for tree in ("exercises",) if release or not solutions else ("exercises", "solutions"):  # releases, bundles: none
        if not (root / tree / ex.module_path).is_file():
            raise r.get("id").error(f"a module file at {tree}/{ex.module_path}", name)
    for key, path in (("tests.visible", visible),) + ((("tests.hidden", hidden),) if not release else ()):
        if not (root / path).is_file():
            raise r.error(f"an existing test file at {path}", key=f"{r.key}.{key}")
    return ex


def _perf_challenge(r: _Reader, profiles: set[str]) -> dict[str, Any]:
    """A performance challenge, checked in full by infralab.perf; here: a mapping naming known profiles."""
    if not isinstance(r.data, dict):
        raise r.error("a mapping describing a performance challenge", r.data)
    for i, name in enumerate(r.data.get("profiles", []) or []):
        if name not in profiles:
            raise r.get("profiles").at(i).error(f"a registered hardware profile ({sorted(profiles)})", name)
    try:
        from infralab.perf.spec import validate_challenge
    except ImportError:
        return dict(r.data)
    return validate_challenge(r.file, r.key, dict(r.data))


def load_course(root: Path | str | None = None) -> Course:
    """Load and validate ``course.yml`` under ``root`` (default: found from the current directory)."""
    root = Path(root).resolve() if root is not None else find_course_root()
    file = root / COURSE_FILE
    if not file.is_file():
        raise CourseError(file, "", "a course.yml file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise CourseError(file, "", "valid YAML", str(e).splitlines()[0]) from None
    r = _Reader(file, data)
    r.mapping({"course", "parts", "profiles_dir", "release", "solutions"}, {"course", "parts"})
    release = r.get("release", False).data is True  # written by `infralab release`
    solutions = r.get("solutions", True).data is not False  # false in a Gradescope bundle (infralab gradescope)
    head = r.get("course")
    head.mapping({"id", "title", "language"}, {"id", "title"})
    language = head.get("language").str() if "language" in head.data else None  # else the locale decides
    if language is not None and language not in LANGS:
        raise head.get("language").error(f"one of {', '.join(LANGS)}", language)
    profiles_dir = Path(r.get("profiles_dir", "hardware_profiles").str())
    profiles = {p.stem for p in (root / profiles_dir).glob("*.yml")}
    parts: list[Part] = []
    seen_parts: set[str] = set()
    seen_ex: set[str] = set()
    for pr in r.get("parts").list():
        pr.mapping({"id", "title", "exercises"}, {"id", "title", "exercises"})
        pid = pr.get("id").ident()
        if pid in seen_parts:
            raise pr.get("id").error("a part id used once", pid)
        seen_parts.add(pid)
        exs = []
        for er in pr.get("exercises").list():
            ex = _exercise(root, pid, er, profiles, release, solutions)
            if ex.id in seen_ex:
                raise er.get("id").error("an exercise id used once in its part", ex.name)
            seen_ex.add(ex.id)
            exs.append(ex)
        parts.append(Part(id=pid, title=pr.get("title").title(), exercises=tuple(exs)))
    return Course(root=root, id=head.get("id").str(), title=head.get("title").title(),
                  parts=tuple(parts), profiles_dir=profiles_dir, language=language)


def find_course_root(start: Path | str | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: cwd) that holds a course.yml."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    raise CourseError(here / COURSE_FILE, "", "a course.yml in this folder or a parent")
