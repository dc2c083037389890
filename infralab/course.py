"""course.yml: the course model, loaded and validated into typed objects.

The file names parts and their exercises. For each exercise it gives the module (the same
relative path under exercises/ and solutions/), its public names, its points, its tests
(visible under exercises/, hidden under graders/), its textbook section, and optionally
performance challenges. Anything off fails with the file, the key path and what was expected.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from infralab.errors import CourseError, InfralabError
from infralab.i18n import LANGS, tr

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
    banned: tuple[str, ...] = ()  # op classes the implementation may not run (see opclasses.py, guards.py)
    mutates: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()  # function -> (parameter, position) it may change
    triton: bool = False  # every call must launch a @triton.jit kernel (see guards.py)
    # mutant name -> why only the hidden tests catch it (docs/authoring.md); every other mutant fails a visible test
    hidden_only: dict[str, str] = field(default_factory=dict, hash=False)
    # a capstone: the exercises whose modules it imports (``from ..part01_transformer import llama``);
    # graded with the student's own parts and with the reference parts (infralab.uses)
    uses: tuple[str, ...] = ()
    reference_parts_points: float = 0.0  # of ``points``: won by the run with the reference parts; 0: no such run

    @property
    def id(self) -> str:
        """Course-wide id, also the module's dotted name: ``part01_transformer.rope``."""
        return f"{self.part}.{self.name}"

    @property
    def may_change(self) -> dict[str, dict[str, int]]:
        """function (or ``Class.method``) -> {parameter: position} of the inputs its spec lets it change
        (course.yml ``mutates:``; position -1 for keyword-only); every other input must stay as it was."""
        return {fn: dict(params) for fn, params in self.mutates}

    @property
    def own_parts_points(self) -> float:
        """Of ``points``: what the run with the student's own parts (of ``uses``) can win."""
        return round(self.points - self.reference_parts_points, 4)

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
    reference_parts: bool = True  # course.yml `reference_parts:`: capstones are also graded on the reference parts

    @property
    def exercises(self) -> tuple[Exercise, ...]:
        return tuple(ex for part in self.parts for ex in part.exercises)

    def exercise(self, exercise_id: str) -> Exercise:
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise KeyError(exercise_id)

    def select(self, parts: list[str] | None = None, exercises: list[str] | None = None) -> tuple[Exercise, ...]:
        """Exercises filtered by part ids and by exercise ids (``rope`` or ``part01_transformer.rope``).

        A name that is not a part or an exercise of the course, or a choice that leaves nothing,
        is an :class:`InfralabError` naming the option and the closest name: nothing runs.
        """
        _check_names("--part", parts or [], [p.id for p in self.parts], "intake.what_part")
        _check_names("--exercise", exercises or [], [ex.name for ex in self.exercises], "intake.what_exercise",
                     also=[ex.id for ex in self.exercises])
        chosen = []
        for ex in self.exercises:
            if parts and ex.part not in parts:
                continue
            if exercises and ex.id not in exercises and ex.name not in exercises:
                continue
            chosen.append(ex)
        if not chosen:
            raise InfralabError(tr("intake.nothing_selected", parts=" ".join(parts or []),
                                   exercises=" ".join(exercises or [])))
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


def _check_names(option: str, given: list[str], known: list[str], what: str, also: list[str] = ()) -> None:
    """Each name given to ``option`` is in ``known`` (or ``also``), else one error with the closest name."""
    import difflib

    known = sorted(set(known))
    for name in given:
        if name not in known and name not in also:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = tr("intake.did_you_mean", name=close[0]) if close else \
                tr("intake.expected_one_of", names=", ".join(known[:40]) + (", ..." if len(known) > 40 else ""))
            raise InfralabError(tr("intake.unknown_selection", option=option, value=name, what=tr(what), hint=hint))


class _Reader:
    """Walks a YAML mapping, keeping the key path for error messages."""

    def __init__(self, file: Path, data: Any, key: str = ""):
        self.file, self.data, self.key = file, data, key

    def error(self, expected: str, got: object = None, key: str | None = None) -> CourseError:
        return CourseError(self.file, self.key if key is None else key, expected, got)

    def mapping(self, allowed: set[str], required: set[str]) -> "_Reader":
        if not isinstance(self.data, dict):
            raise self.error(tr("course.a_mapping"), type(self.data).__name__)
        for k in self.data:
            if k not in allowed:
                raise self.error(tr("course.one_of", names=sorted(allowed)), k, key=self._join(str(k)))
        for k in sorted(required):
            if k not in self.data:
                raise self.error(tr("course.key_present"), key=self._join(k))
        return self

    def _join(self, k: str) -> str:
        return f"{self.key}.{k}" if self.key else k

    def get(self, k: str, default: Any = None) -> "_Reader":
        return _Reader(self.file, self.data.get(k, default), self._join(k))

    def at(self, i: int) -> "_Reader":
        return _Reader(self.file, self.data[i], f"{self.key}[{i}]")

    def str(self) -> str:
        if not isinstance(self.data, str) or not self.data.strip():
            raise self.error(tr("course.non_empty_string"), self.data)
        return self.data

    def ident(self) -> str:
        s = self.str()
        if not _ID.match(s):
            raise self.error(tr("course.identifier"), s)
        return s

    def number(self, minimum: float = 0.0) -> float:
        if isinstance(self.data, bool) or not isinstance(self.data, (int, float)) or self.data < minimum:
            raise self.error(tr("course.number_at_least", minimum=minimum), self.data)
        return float(self.data)

    def bool(self) -> bool:
        if not isinstance(self.data, bool):
            raise self.error(tr("course.true_or_false"), self.data)
        return self.data

    def list(self) -> list["_Reader"]:
        if not isinstance(self.data, list):
            raise self.error(tr("course.a_list"), type(self.data).__name__)
        return [self.at(i) for i in range(len(self.data))]

    def title(self) -> Title:
        self.mapping({"en", "zh"}, {"en", "zh"})
        return Title(en=self.get("en").str(), zh=self.get("zh").str())


_EXERCISE_KEYS = {"id", "title", "public", "points", "textbook", "tests", "mutants", "requires", "perf", "banned",
                  "triton", "hidden_only", "mutates", "uses", "reference_parts_points"}
_REQUIRES = {"triton", "gpu", "distributed"}


def _exercise(root: Path, part: str, r: _Reader, profiles: set[str], release: bool = False,
              solutions: bool = True) -> Exercise:
    r.mapping(_EXERCISE_KEYS, {"id", "title", "public", "points", "textbook"})
    name = r.get("id").ident()
    public = tuple(p.str() for p in r.get("public", []).list())
    if not public:
        raise r.get("public").error(tr("course.public_names"))
    tests = r.get("tests", {})
    tests.mapping({"visible", "hidden"}, set())
    visible = Path(tests.get("visible", f"exercises/{part}/tests/test_{name}.py").str())
    hidden = Path(tests.get("hidden", f"graders/{part}/test_{name}.py").str())
    mutants = Path(r.get("mutants", f"fixtures/mutants/{part}/{name}").str())
    requires = tuple(x.str() for x in r.get("requires", []).list())
    for i, req in enumerate(requires):
        if req not in _REQUIRES:
            raise r.get("requires").at(i).error(tr("course.one_of", names=sorted(_REQUIRES)), req)
    perf = []
    for p in r.get("perf", []).list():
        perf.append(_perf_challenge(p, profiles))
    ex = Exercise(
        part=part, name=name, title=r.get("title").title(), public=public,
        points=r.get("points").number(0.0), textbook=r.get("textbook").str(),
        visible_tests=visible, hidden_tests=hidden, mutants_dir=mutants,
        requires=requires, perf=tuple(perf),
        banned=_banned(r.get("banned", [])),
        triton=r.get("triton", False).bool(),
        hidden_only=_hidden_only(root, r.get("hidden_only", {}), mutants, release),
    )
    for tree in ("exercises",) if release or not solutions else ("exercises", "solutions"):  # releases, bundles: none
        if not (root / tree / ex.module_path).is_file():
            raise r.get("id").error(tr("course.module_file", path=f"{tree}/{ex.module_path}"), name)
    for key, path in (("tests.visible", visible),) + ((("tests.hidden", hidden),) if not release else ()):
        if not (root / path).is_file():
            raise r.error(tr("course.test_file", path=path), key=f"{r.key}.{key}")
    if r.data.get("mutates") is not None:
        ex = replace(ex, mutates=_mutates(r.get("mutates"), root / "exercises" / ex.module_path, public))
    return ex


def _hidden_only(root: Path, r: _Reader, mutants: Path, release: bool) -> dict[str, str]:
    """``hidden_only: {mutant: reason}``: mutants the visible tests need not catch, each with its reason."""
    if not isinstance(r.data, dict):
        raise r.error(tr("course.hidden_only_mapping"), type(r.data).__name__)
    out = {}
    for name in r.data:
        entry = r.get(name)
        mutant = str(name)
        if not release and not (root / mutants / f"{mutant}.py").is_file():
            raise entry.error(tr("course.mutant_name", folder=mutants), mutant)
        out[mutant] = entry.str()
    return out


def _banned(r: _Reader) -> tuple[str, ...]:
    """course.yml ``banned:``: op classes, or routine names standing for their class (infralab.opclasses)."""
    from infralab.opclasses import BANNABLE, ROUTINE_CLASS, ban_classes

    for i, item in enumerate(r.list()):
        if item.ident() not in BANNABLE and item.data not in ROUTINE_CLASS:
            raise item.error(tr("integrity.course.banned_name", classes=", ".join(BANNABLE)), item.data)
    return tuple(sorted(ban_classes(r.data)))


def _signatures(stub: Path) -> dict[str, list[tuple[str, int]]]:
    """(parameter, position) of every module-level function and ``Class.method`` of the stub
    (positions without ``self``; -1 for keyword-only)."""
    tree = ast.parse(stub.read_text(encoding="utf-8"), filename=str(stub))
    found: dict[str, list[tuple[str, int]]] = {}

    def params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[tuple[str, int]]:
        positional = [a.arg for a in fn.args.posonlyargs + fn.args.args][1 if method else 0:]
        return [(n, i) for i, n in enumerate(positional)] + [(a.arg, -1) for a in fn.args.kwonlyargs]

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = params(node, False)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}.{item.name}"] = params(item, True)
    return found


def _mutates(r: _Reader, stub: Path, public: tuple[str, ...]) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """course.yml ``mutates: {function: [parameter, ...]}``: each function public (or ``Class.method``
    of a public class), each parameter one of the stub's, resolved to its position."""

    if not isinstance(r.data, dict):
        raise r.error(tr("course.mutates_mapping"), type(r.data).__name__)
    signatures = _signatures(stub)
    out = []
    for fn in r.data:
        owner = str(fn).split(".")[0]
        if not isinstance(fn, str) or owner not in public or fn not in signatures:
            raise r.error(tr("integrity.course.mutates_function", public=", ".join(public)), fn,
                          key=f"{r.key}.{fn}")
        params = dict(signatures[fn])
        chosen = []
        for item in r.get(fn).list():
            if item.data not in params:
                raise item.error(tr("integrity.course.mutates_argument", function=fn, file=stub,
                                    parameters=", ".join(params)), item.data)
            chosen.append((item.data, params[item.data]))
        out.append((fn, tuple(chosen)))
    return tuple(out)


def _perf_challenge(r: _Reader, profiles: set[str]) -> dict[str, Any]:
    """A performance challenge, checked in full by infralab.perf; here: a mapping naming known profiles."""
    if not isinstance(r.data, dict):
        raise r.error(tr("course.perf_mapping"), r.data)
    for i, name in enumerate(r.data.get("profiles", []) or []):
        if name not in profiles:
            raise r.get("profiles").at(i).error(tr("course.registered_profile", profiles=sorted(profiles)), name)
    try:
        from infralab.perf.spec import validate_challenge
    except ImportError:
        return dict(r.data)
    return validate_challenge(r.file, r.key, dict(r.data))


def _line_column(text: str | bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``."""
    newline = "\n" if isinstance(text, str) else b"\n"
    head = text[:offset]
    return head.count(newline) + 1, offset - (head.rfind(newline) + 1) + 1


def load_yaml(file: Path) -> Any:
    """The data of a YAML file the kit reads (course.yml, hardware profiles).

    Every way the file can be unusable is one :class:`CourseError` naming the file, with the line
    and column where that applies: unreadable, not UTF-8 (a file saved as GBK), binary content,
    a YAML syntax error.
    """
    try:
        raw = Path(file).read_bytes()
    except OSError as e:
        raise CourseError(file, "", tr("intake.yaml_unreadable", error=f"{type(e).__name__}: {e.strerror or e}")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = _line_column(raw, e.start)
        raise CourseError(file, "", tr("intake.yaml_not_utf8", line=line, column=column,
                                       byte=f"0x{raw[e.start]:02x}")) from None
    try:
        return yaml.safe_load(text)
    except yaml.reader.ReaderError as e:  # a character YAML does not allow: binary content
        line, column = _line_column(text, e.position)
        raise CourseError(file, "", tr("intake.yaml_binary", line=line, column=column,
                                       byte=f"0x{e.character:02x}" if isinstance(e.character, int)
                                       else repr(e.character))) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise CourseError(file, "", tr("intake.yaml_syntax", line=line, column=column, problem=problem)) from None


def load_course(root: Path | str | None = None) -> Course:
    """Load and validate ``course.yml`` under ``root`` (default: found from the current directory)."""
    root = Path(root).resolve() if root is not None else find_course_root()
    file = root / COURSE_FILE
    if not file.is_file():
        raise CourseError(file, "", tr("course.file_missing"))
    data = load_yaml(file)
    r = _Reader(file, data)
    r.mapping({"course", "parts", "profiles_dir", "release", "solutions", "reference_parts"}, {"course", "parts"})
    release = r.get("release", False).data is True  # written by `infralab release`
    solutions = r.get("solutions", True).data is not False  # false in a Gradescope bundle (infralab gradescope)
    head = r.get("course")
    head.mapping({"id", "title", "language"}, {"id", "title"})
    language = head.get("language").str() if "language" in head.data else None  # else the locale decides
    if language is not None and language not in LANGS:
        raise head.get("language").error(tr("course.one_of", names=", ".join(LANGS)), language)
    profiles_dir = Path(r.get("profiles_dir", "hardware_profiles").str())
    profiles = {p.stem for p in (root / profiles_dir).glob("*.yml")}
    reference_parts = r.get("reference_parts", True).bool()  # false: no capstone is graded with the reference parts
    parts: list[Part] = []
    seen_parts: set[str] = set()
    seen_ex: set[str] = set()
    capstones: list[tuple[Exercise, _Reader]] = []
    for pr in r.get("parts").list():
        pr.mapping({"id", "title", "exercises"}, {"id", "title", "exercises"})
        pid = pr.get("id").ident()
        if pid in seen_parts:
            raise pr.get("id").error(tr("course.part_id_once"), pid)
        seen_parts.add(pid)
        exs = []
        for er in pr.get("exercises").list():
            ex = _exercise(root, pid, er, profiles, release, solutions)
            if ex.id in seen_ex:
                raise er.get("id").error(tr("course.exercise_id_once"), ex.name)
            seen_ex.add(ex.id)
            exs.append(ex)
            if "uses" in er.data or "reference_parts_points" in er.data:
                capstones.append((ex, er))
        parts.append(Part(id=pid, title=pr.get("title").title(), exercises=tuple(exs)))
    if capstones:
        from infralab.uses import read_uses
        parts = read_uses(root, parts, capstones, reference_parts, check_imports=solutions and not release,
                          bundle=not solutions and not release)
    return Course(root=root, id=head.get("id").str(), title=head.get("title").title(),
                  parts=tuple(parts), profiles_dir=profiles_dir, language=language,
                  reference_parts=reference_parts)


def find_course_root(start: Path | str | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: cwd) that holds a course.yml."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    raise CourseError(here / COURSE_FILE, "", tr("course.not_found"))
