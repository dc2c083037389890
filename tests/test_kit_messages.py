"""Every text the kit itself shows a person comes from the catalogue.

tests/test_assert_messages.py holds the course's tests to the catalogue; this scan holds the kit
(``infralab/``, outside ``infralab/i18n``): an error raised at a user's input (``CourseError``,
``InfralabError``, ``TargetError``, ``ValueError``, ...), a line the CLI prints, a performance
verdict's reason, an argparse ``error``, a ``pytest.fail``/``skip``/``sys.exit`` text. Such a call
given an f-string with a word in its own text, or a string literal with a word and a space (a
sentence, not a machine word such as ``"pass"``, a field name or ``f"{name}: {message}"``), would
show English under ``--lang zh``: write ``tr(key, **fields)`` with the key in infralab/i18n. A
``tr(...)`` with a literal key must name a key of the catalogue with the same ``{fields}`` as its
English text.

An internal check that only a bug in the kit can trip (never a user's input) may stay English when
its line carries the comment ``# kit bug, not a user message``. An AST scan of ~150 files: well
under a second.
"""
import ast
import builtins
import re
from functools import lru_cache
from pathlib import Path

import pytest

from infralab.i18n import catalog
from infralab.judge.minicourse import rmsnorm_course
from tests.test_assert_messages import _called, _catalogue_problem
from tests.test_cli_inputs import one_line_error
from tests.test_i18n import CJK

ROOT = Path(__file__).resolve().parents[1]
KIT_BUG_MARK = "# kit bug, not a user message"
# Calls whose text a person reads besides exceptions: printed lines, performance verdicts, and the
# exits of pytest/sys/argparse, and course.yml's reader (``r.error(expected)``).
SHOWN = {"print", "Verdict", "Decision", "fail", "skip", "exit", "error"}
WORD = re.compile(r"[A-Za-z]{2,}")
MARKUP = re.compile(r"\[/?[a-z ]*\]")  # rich's [red]...[/]: styles, not words
# Arguments that name where, not what: CourseError(file, key, expected, got), r.error(expected, key=...).
FIRST_TEXT = {"CourseError": 2, "Verdict": 2}  # a verdict's level and decision are machine words
NOT_TEXT = {"key", "file", "path"}
BUILTIN_ERRORS = {name for name, obj in vars(builtins).items()
                  if isinstance(obj, type) and issubclass(obj, BaseException)}


def _is_sentence(node: ast.AST) -> bool:
    """English words: an f-string whose own text has a word (``f"{name}: {message}"`` has none), a
    string literal with a word and a space, or either joined with ``+``/``%``/``.format``."""
    if isinstance(node, ast.BinOp):
        return _is_sentence(node.left) or _is_sentence(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _is_sentence(node.func.value)
    if isinstance(node, ast.JoinedStr):
        own = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        return bool(WORD.search(MARKUP.sub("", own)))
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value.strip() \
        and bool(WORD.search(node.value))


def exception_names(trees: list[ast.Module]) -> set[str]:
    """Python's exceptions and every class the kit derives from one (to any depth)."""
    names = set(BUILTIN_ERRORS)
    classes = [n for tree in trees for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    grown = True
    while grown:
        before = len(names)
        names |= {c.name for c in classes if any(ast.unparse(b).split(".")[-1] in names for b in c.bases)}
        grown = len(names) > before
    return names


def _shown_call(node: ast.Call, errors: set[str]) -> bool:
    called = _called(node)
    if called in errors:
        return True
    if called not in SHOWN:
        return False
    func = node.func
    if called in ("fail", "skip", "exit") and isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id in ("pytest", "sys")
    if called == "error":  # parser.error(...), course.yml's r.error(...); not a logger's
        return isinstance(func, ast.Attribute) and "log" not in ast.unparse(func.value)
    return True


@lru_cache(maxsize=None)
def _parsed(path: Path) -> tuple[str, ast.Module]:
    text = path.read_text(encoding="utf-8")
    return text, ast.parse(text, filename=str(path))


def kit_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "infralab").rglob("*.py") if "i18n" not in p.relative_to(root).parts)


def untranslated_messages(path: Path, root: Path = ROOT, errors: set[str] = BUILTIN_ERRORS) -> list[str]:
    """``path:line: call`` (path relative to ``root``) of each text the file shows a person outside
    the catalogue; ``errors``: the names of exception classes (:func:`exception_names`)."""
    text, tree = _parsed(path)
    lines = text.splitlines()
    messages = catalog()
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        line = "\n".join(lines[node.lineno - 1:(node.end_lineno or node.lineno)])
        if KIT_BUG_MARK in line:
            continue
        where = f"{path.relative_to(root)}:{node.lineno}"
        texts = [*node.args[FIRST_TEXT.get(_called(node), 0):],
                 *(k.value for k in node.keywords if k.arg not in NOT_TEXT)]
        if _shown_call(node, errors) and any(_is_sentence(a) for a in texts):
            found.append(f"{where}: {_called(node)}(...) with English text outside the catalogue")
        elif _called(node) == "tr" and node.args and isinstance(node.args[0], ast.Constant):
            problem = _catalogue_problem(node.args[0], node.keywords, messages)
            if problem:
                found.append(f"{where}: tr: {problem}")
    return found


def test_every_text_the_kit_shows_a_person_comes_from_the_catalogue():
    sources = kit_files(ROOT)
    assert len(sources) > 60, "the scan found too few kit files: the glob is wrong"
    errors = exception_names([_parsed(path)[1] for path in sources])
    assert {"CourseError", "TargetError", "Rejected", "ValueError"} <= errors, "the exception scan is wrong"
    found = [hit for path in sources for hit in untranslated_messages(path, ROOT, errors)]
    assert not found, (f"{len(found)} texts the kit shows a person are English only "
                       "(write tr(key, **fields) with the key in infralab/i18n):\n" + "\n".join(found))


def test_the_scan_finds_each_kind_of_untranslated_message(tmp_path):
    src = tmp_path / "case.py"
    src.write_text(
        'print(f"wrote {path}")\n'
        'raise CourseError(path, "parts", "a list of parts", value)\n'
        'raise ValueError("bad option " + name)\n'
        'pytest.skip("needs a GPU")\n'
        'parser.error("unknown option {}".format(name))\n'
        'sys.exit(f"failed: {why}")\n'
        'print(tr("no.such.key"))\n'
        'raise CourseError(path, "parts", tr("core.looks_like"), value)\n'
        'print(tr("core.looks_like", diagnosis=d))\n'
        'raise ValueError(f"shape {shape}")  # kit bug, not a user message\n'
        'record = Verdict(level="pass", decision="accept")\n'
        'print(line)\n'
        'log.error("a logger line for the kit developer")\n'
        'raise KeyError(name)\n'
        'raise r.error("a mapping of parts")\n'
        'class Refused(RuntimeError): pass\n'
        'class Closed(Refused): pass\n'
        'raise Closed(f"socket closed at {n}")\n'
        'raise CourseError(f"{root}/course.yml", f"parts[{i}]", tr("core.looks_like", diagnosis=d))\n'
        'raise r.error(tr("core.looks_like", diagnosis=d), key=f"{r.key}.tests")\n'
        'raise RuntimeError(f"{name}: {message}")\n'
        'print(f"  {name:<20} {points:>6.2f}")\n'
        'print(f"{name} ok")\n'
        'console.print(f"[red]{name}[/]: {hole}")\n'
        'return Verdict("below pass", "tune", tr("core.looks_like", diagnosis=d))\n', encoding="utf-8")
    errors = exception_names([_parsed(src)[1]]) | {"CourseError"}
    assert {"Refused", "Closed"} <= errors
    hits = untranslated_messages(src, tmp_path, errors)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [1, 2, 3, 4, 5, 6, 7, 8, 15, 18, 23], hits


@pytest.fixture
def chinese(monkeypatch):
    """``--lang zh`` sets INFRALAB_LANG for the process: restored after the test."""
    monkeypatch.setenv("INFRALAB_LANG", "en")


def test_a_broken_course_yml_key_is_one_chinese_line_naming_the_file_and_key(capsys, tmp_path, chinese):
    root = rmsnorm_course(tmp_path / "course")
    course_yml = root / "course.yml"
    course_yml.write_text(course_yml.read_text(encoding="utf-8").replace("  id: ", "  idd: ", 1), encoding="utf-8")
    err = one_line_error(capsys, ["--lang", "zh", "check", "--course", str(root)])
    assert str(course_yml) in err and "course.idd" in err and CJK.search(err), err


def test_a_bad_option_value_speaks_the_language_of_lang(capsys, chinese):
    err = one_line_error(capsys, ["--lang", "zh", "grade", "x", "--out", "o", "--seed", "-1"])
    assert "--seed" in err and CJK.search(err), err


def test_argparse_own_errors_speak_the_run_language(capsys, chinese):
    err = one_line_error(capsys, ["--lang", "zh", "check", "--target"])
    assert "--target" in err and CJK.search(err), err
    err = one_line_error(capsys, ["--lang", "en", "check", "--target"])
    assert err == "infralab check: argument --target: expected one argument"
