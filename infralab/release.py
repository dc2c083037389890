"""``infralab release --out DIR``: the student version of the course, checked before it ships.

The release holds the stubs and their visible tests, the engine, the hardware profiles, the
docs students need and a course.yml marked ``release: true`` (the course model then expects
neither solutions nor hidden tests). It never holds ``solutions/``, ``graders/``, ``fixtures/``
(mutants, sample submissions), the kit's own tests or benchmarks. Two checks run on the result:

- leak check: no function body of any solution, nor of the dev-only references and known mistakes
  (``infralab/mistakes``: every function there counts as a reference), appears in any release file
  (AST comparison of bodies, and the body's text); no release file equals a file of solutions/,
  graders/ or fixtures/; nothing of ``infralab/mistakes`` ships, and no shipped module imports it;
- golden check (before writing): the visible tests that use the ``golden`` fixture run on the
  solutions in the dev tree, which recomputes every recorded expectation: a stale golden refuses
  the release, naming the exercise (infralab.golden);
- stub check: the release's visible tests collect and fail cleanly on the stubs (each failure
  a NotImplementedError, no collection error).
"""
from __future__ import annotations

import argparse
import ast
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from infralab.course import Course, load_course
from infralab.errors import InfralabError
from infralab.golden import DEV_ONLY_PACKAGE, RELEASE_MARKER, uses_golden
from infralab.i18n import tr

TOP_FILES = ("pyproject.toml", "LICENSE", ".gitignore")  # README.md and Makefile: the student's own (templates/)
TOP_DIRS = ("exercises", "infralab", "hardware_profiles", "docs")
NOT_SHIPPED_DOCS = ("authoring.md", "grading.md")  # instructor documentation
SECRET_DIRS = ("solutions", "graders", "fixtures")
DEV_ONLY_DIR = DEV_ONLY_PACKAGE.replace(".", "/")  # infralab/mistakes: references and known mistakes
MARKER = RELEASE_MARKER
TEMPLATES = Path(__file__).parent / "templates"


def require_hidden_tests(course: Course, exercises) -> None:
    """Refuse to grade where the hidden tests are absent (a student release): never grade on visible tests."""
    missing = [ex.id for ex in exercises if not (course.root / ex.hidden_tests).is_file()]
    if missing:
        raise InfralabError(tr("routes.no_hidden_tests", root=course.root, exercises=", ".join(missing[:3])
                               + (" ..." if len(missing) > 3 else "")))


def student_readme(course: Course, shipped_docs: list[str]) -> str:
    exercises = "\n".join(f"- `{ex.id}` ({ex.points:g}): {ex.title.en} · {ex.title.zh}" for ex in course.exercises)
    docs = "\n".join(f"- [docs/{name}](docs/{name})" for name in shipped_docs) or "-"
    return (TEMPLATES / "release_README.md").read_text(encoding="utf-8").format(
        title_en=course.title.en, title_zh=course.title.zh, exercises=exercises, docs=docs)


@dataclass
class ReleaseReport:
    out: Path
    files: int = 0
    leaks: list[str] = field(default_factory=list)
    stub_problems: list[str] = field(default_factory=list)
    stub_tests: int = 0
    golden_problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.leaks and not self.stub_problems and not self.golden_problems


def _ignorer(root: Path):
    def ignore(folder: str, names: list[str]) -> set[str]:
        drop = {n for n in names if n in ("__pycache__", ".pytest_cache") or n.endswith((".pyc", ".egg-info"))}
        if Path(folder).name == "docs":
            drop |= {n for n in names if n in NOT_SHIPPED_DOCS}
        here = Path(folder).resolve()
        drop |= {n for n in names if (here / n) == (root / DEV_ONLY_DIR).resolve()}  # dev-only by declaration
        return drop
    return ignore


def _release_course_yml(course: Course, dest: Path) -> None:
    data = yaml.safe_load((course.root / "course.yml").read_text(encoding="utf-8"))
    for part in data["parts"]:
        for ex in part["exercises"]:
            ex.get("tests", {}).pop("hidden", None)
            ex.pop("mutants", None)
    data["release"] = True  # course.py then expects no solutions/ and no hidden tests
    head = "# Student release: hidden tests and solutions are not shipped.\n"
    dest.write_text(head + yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def write_release(course: Course, out: Path) -> int:
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise InfralabError(tr("release.out_not_release", out=out))
        shutil.rmtree(out)
    if course.root.resolve() in (out, *out.parents):
        raise InfralabError(tr("release.out_inside_course"))
    out.mkdir(parents=True, exist_ok=True)
    for name in TOP_FILES:
        if (course.root / name).is_file():
            shutil.copyfile(course.root / name, out / name)
    for name in TOP_DIRS:
        if (course.root / name).is_dir():
            shutil.copytree(course.root / name, out / name, ignore=_ignorer(course.root), symlinks=False)
    _release_course_yml(course, out / "course.yml")
    shutil.copyfile(TEMPLATES / "release_Makefile", out / "Makefile")
    shipped = sorted(p.name for p in (out / "docs").glob("*.md")) if (out / "docs").is_dir() else []
    (out / "README.md").write_text(student_readme(course, shipped), encoding="utf-8")
    (out / MARKER).write_text("written by infralab release\n")
    return sum(1 for p in out.rglob("*") if p.is_file())


# -- leak check ----------------------------------------------------------------------------------
def _bodies(tree: ast.AST) -> list[tuple[str, str]]:
    """(function name, dump of its body without the docstring) for every non-trivial function."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                body = body[1:]
            trivial = len(body) <= 1 and all(isinstance(s, (ast.Pass, ast.Raise, ast.Return)) for s in body)
            if not trivial:
                found.append((node.name, "\n".join(ast.dump(s) for s in body)))
    return found


def _body_texts(source: str, tree: ast.AST) -> list[tuple[str, str]]:
    lines = source.splitlines()
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            start = node.body[0].lineno
            if isinstance(node.body[0], ast.Expr) and isinstance(getattr(node.body[0], "value", None), ast.Constant):
                start = node.body[0].end_lineno + 1
            body = [ln.strip() for ln in lines[start - 1:node.end_lineno] if ln.strip() and not ln.strip().startswith("#")]
            if len(body) >= 3:
                texts.append((node.name, "\n".join(body)))
    return texts


def _dev_only_imports(tree: ast.AST) -> list[int]:
    """Lines that import the dev-only package (``import``, ``from ... import``, or its name as a string)."""
    lines = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value.strip()]
        if any(n == DEV_ONLY_PACKAGE or n.startswith(DEV_ONLY_PACKAGE + ".") for n in names):
            lines.append(node.lineno)
    return lines


def leak_check(course_root: Path, release: Path) -> list[str]:
    course_root, release = Path(course_root), Path(release)
    secrets_ast: list[tuple[str, str, str]] = []
    secrets_text: list[tuple[str, str, str]] = []
    references = sorted((course_root / "solutions").rglob("*.py")) + sorted((course_root / DEV_ONLY_DIR).rglob("*.py"))
    for file in references:
        source = file.read_text(encoding="utf-8")
        tree = ast.parse(source)
        rel = file.relative_to(course_root).as_posix()
        secrets_ast += [(rel, name, dump) for name, dump in _bodies(tree)]
        secrets_text += [(rel, name, text) for name, text in _body_texts(source, tree)]
    secret_files = {}
    for d in SECRET_DIRS:
        for file in (course_root / d).rglob("*"):
            if file.is_file() and file.name != "__init__.py" and "__pycache__" not in file.parts:
                secret_files[file.read_bytes()] = file.relative_to(course_root).as_posix()
    leaks = []
    for file in sorted(p for p in release.rglob("*") if p.is_file()):
        rel = file.relative_to(release).as_posix()
        data = file.read_bytes()
        if rel.startswith(DEV_ONLY_DIR + "/"):
            leaks.append(tr("golden.release_dev_only", path=rel, package=DEV_ONLY_PACKAGE))
        if data in secret_files and file.name != "__init__.py":
            leaks.append(tr("release.copy_of", file=rel, secret=secret_files[data]))
        if file.suffix != ".py":
            continue
        source = data.decode("utf-8", errors="replace")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        if rel != "infralab/golden.py":  # the declaration: it imports the package in the dev tree only
            leaks += [tr("golden.release_imports", path=rel, package=DEV_ONLY_PACKAGE, line=line)
                      for line in _dev_only_imports(tree)]
        mine = {dump for _, dump in _bodies(tree)}
        stripped = "\n".join(ln.strip() for ln in source.splitlines() if ln.strip())
        for srel, name, dump in secrets_ast:
            if dump in mine:
                leaks.append(tr("release.holds_body", file=rel, source=srel, name=name))
        for srel, name, text in secrets_text:
            if text in stripped and tr("release.holds_body", file=rel, source=srel, name=name) not in leaks:
                leaks.append(tr("release.holds_text", file=rel, source=srel, name=name))
    return leaks


# -- stub check ----------------------------------------------------------------------------------
def stub_check(release: Path) -> tuple[int, list[str]]:
    """The release's visible tests on its stubs: (number of tests, problems)."""
    from infralab.runner import TestRun, run_tests
    course = load_course(release)
    record = run_tests(course, TestRun(target="exercises", exercises=course.exercises, visible=True, hidden=False,
                                       mode="check", seed=0))
    problems = []
    tests = [t for ex in record["exercises"] for t in ex["tests"]]
    if record.get("pytest_exit") not in (0, 1):
        problems.append(tr("release.pytest_status", status=record.get("pytest_exit"),
                           output=record.get("output_tail", "")[-800:]))
    for ex in record["exercises"]:
        if not ex["tests"]:
            problems.append(tr("release.no_visible_test", exercise=ex["id"]))
    for t in tests:
        if t["outcome"] == "failed" and not t["message"].startswith("NotImplementedError"):
            problems.append(tr("release.stub_fails_badly", test=t["nodeid"],
                               message=t["message"].splitlines()[0][:200]))
    return len(tests), problems


def golden_check(course: Course) -> list[str]:
    """The visible tests that use goldens, on the solutions in the dev tree: every recorded expectation
    is recomputed from infralab/mistakes; one line per stale golden (or failing visible test), naming the exercise."""
    from infralab.runner import TestRun, run_tests
    exercises = tuple(ex for ex in course.exercises if uses_golden(course.root, ex))
    if not exercises:
        return []
    record = run_tests(course, TestRun(target="solutions", exercises=exercises, visible=True, hidden=False,
                                       mode="check", seed=0))
    problems = []
    if record.get("pytest_exit") not in (0, 1):
        problems.append(tr("release.pytest_status", status=record.get("pytest_exit"),
                           output=record.get("output_tail", "")[-800:]))
    for ex in record["exercises"]:
        for t in ex["tests"]:
            if t["outcome"] == "failed":
                problems.append(tr("golden.release_stale", exercise=ex["id"], test=t["name"],
                                   message=t["message"].splitlines()[0][:300]))
    return problems


def release(course: Course, out: Path, *, check_stubs: bool = True, check_goldens: bool = True) -> ReleaseReport:
    report = ReleaseReport(out=Path(out).resolve())
    if check_goldens:
        report.golden_problems = golden_check(course)
    report.files = write_release(course, out)
    report.leaks = leak_check(course.root, report.out)
    if check_stubs:
        report.stub_tests, report.stub_problems = stub_check(report.out)
    return report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="folder for the student version (new, or an earlier release)")
    p.add_argument("--no-stub-check", action="store_true", help="skip running the visible tests on the stubs")
    p.add_argument("--no-golden-check", action="store_true",
                   help="skip recomputing the visible tests' goldens from the references (infralab.golden)")


def run(args: argparse.Namespace) -> int:
    course = load_course()
    report = release(course, args.out, check_stubs=not args.no_stub_check, check_goldens=not args.no_golden_check)
    print(tr("release.summary", files=report.files, out=report.out))
    if not args.no_golden_check:
        print(tr("golden.release_summary_ok") if not report.golden_problems
              else tr("golden.release_summary_stale", count=len(report.golden_problems)))
        for line in report.golden_problems:
            print(f"  {line}")
    print(tr("release.leak_ok") if not report.leaks else tr("release.leaks", count=len(report.leaks)))
    for line in report.leaks:
        print(tr("release.leak_line", line=line))
    if not args.no_stub_check:
        print(tr("release.stub_ok", tests=report.stub_tests) if not report.stub_problems
              else tr("release.stub_problems", tests=report.stub_tests, count=len(report.stub_problems)))
        for line in report.stub_problems:
            print(f"  {line}")
    return 0 if report.ok else 1
