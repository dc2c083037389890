"""Every text the kit itself shows a person comes from the catalogue.

tests/test_assert_messages.py holds the course's tests to the catalogue; this scan holds the kit
(``infralab/``, outside ``infralab/i18n``): an error raised at a user's input (``CourseError``,
``InfralabError``, ``TargetError``, ``ValueError``, ...), a line the CLI prints, a performance
verdict's reason, an argparse ``error``, a ``pytest.fail``/``skip``/``sys.exit`` text, the CLI's help
(any call's ``help=``/``description=``: argparse options and parsers, pytest's ``addoption``). Such a call
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
import unicodedata
from functools import lru_cache
from pathlib import Path

import pytest
from _pytest.config.argparsing import Parser

from infralab import golden, mutate_plugin, plugin
from infralab.cli import COMMANDS, main
from infralab.i18n import LANGS, catalog, fields, tr
from infralab.options import wrap_columns
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
HELP_TEXT = {"help", "description"}  # argparse's and pytest's help: read by a person in --help
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


def _docstring(node: ast.AST) -> bool:
    """A text taken from a docstring (``description=__doc__.splitlines()[0]``): English."""
    return any(isinstance(n, (ast.Name, ast.Attribute)) and "__doc__" in (getattr(n, "id", "") + getattr(n, "attr", ""))
               for n in ast.walk(node))


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
        elif any(k.arg in HELP_TEXT and (_is_sentence(k.value) or _docstring(k.value)) for k in node.keywords):
            found.append(f"{where}: {_called(node)}(...) with an English help text outside the catalogue")
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
        'return Verdict("below pass", "tune", tr("core.looks_like", diagnosis=d))\n'
        'p.add_argument("--seed", type=int, help="the grading seed")\n'
        'parser = ArgumentParser(prog="infralab", description=f"grade {what} in isolation")\n'
        'group.addoption("--target", help="what to test: " + TARGETS)\n'
        'sub.add_parser("show", help=tr("help.profile.show"))\n'
        'bar.update(task, advance=1, description=label)\n'
        'p.add_argument("--backend", help="%(default)s")\n'
        'p = ArgumentParser(description=main.__doc__)\n'
        'p = ArgumentParser(description=__doc__.splitlines()[0])\n', encoding="utf-8")
    errors = exception_names([_parsed(src)[1]]) | {"CourseError"}
    assert {"Refused", "Closed"} <= errors
    hits = untranslated_messages(src, tmp_path, errors)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [1, 2, 3, 4, 5, 6, 7, 8, 15, 18, 23, 26, 27, 28, 32, 33], hits


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


def test_every_help_text_survives_argparse_percent_formatting():
    """argparse formats an option's help with ``%``: a bare percent sign in either language breaks
    ``--help`` (write ``%%``); ``%(default)s`` must name a field argparse has."""
    params = {name: "x" for name in ("default", "prog", "dest", "choices", "metavar", "type", "required", "nargs")}
    broken = []
    for key, texts in catalog().items():
        for text in texts if key.startswith("help.") else ():
            try:
                text % params
            except (ValueError, KeyError, TypeError) as e:
                broken.append(f"{key}: {text!r}: {e}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("width", [24, 40, 56])
def test_chinese_help_wraps_by_display_columns(width):
    """A Chinese character takes two terminal columns: every Chinese help text, wrapped to ``width``,
    keeps its words, fits (a single word too long for a line stands alone), and no line starts with a
    closing or ends with an opening punctuation mark."""
    texts = [zh for key, (_, zh) in catalog().items() if key.startswith("help.") and CJK.search(zh)]
    assert len(texts) > 90
    for text in texts:
        lines = wrap_columns(text, width)
        assert "".join(lines).replace(" ", "") == text.replace(" ", ""), (text, lines)
        for line in lines:
            cells = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
            assert cells <= width or " " not in line, (width, line)
            assert line[0] not in "，。；：、）》" and line[-1] not in "（《", (width, lines)


def _help_page(capsys, monkeypatch, argv: list[str]) -> str:
    monkeypatch.setenv("COLUMNS", "400")  # one line per option: a help text is found whole
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 0
    return capsys.readouterr().out


def _grade_help_keys() -> list[str]:
    """The catalogue's texts of ``infralab grade --help`` that have no fields (argparse's own words too)."""
    keys = [k for k in catalog() if k.startswith(("help.grade.", "help.common.grade_", "help.argparse."))
            or k == "help.command.grade"]
    return [k for k in keys if not fields(catalog()[k][0]) and "%" not in catalog()[k][0]]


@pytest.mark.parametrize("lang", LANGS)
def test_grade_help_speaks_the_language_of_lang(capsys, monkeypatch, chinese, lang):
    page = _help_page(capsys, monkeypatch, ["--lang", lang, "grade", "--help"])
    other = LANGS[1 - LANGS.index(lang)]
    keys = _grade_help_keys()
    assert len(keys) > 10, keys
    assert [k for k in keys if tr(k, lang) not in page] == [], page
    assert [k for k in keys if tr(k, other) in page] == [], page
    assert bool(CJK.search(page)) == (lang == "zh"), page


def test_the_command_list_follows_infralab_lang(capsys, monkeypatch, chinese):
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    page = _help_page(capsys, monkeypatch, ["--help"])
    assert all(tr(f"help.command.{name}", "zh") in page for name in COMMANDS), page
    assert tr("help.cli.lang", "zh") in page and tr("help.cli.description", "zh") in page, page


def test_pytest_help_of_the_plugin_options_follows_the_language(monkeypatch, chinese):
    """``pytest --help``: the options are added before any is parsed, so INFRALAB_LANG (or the locale) decides."""
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    parser = Parser(_ispytest=True)
    for hook in (plugin.pytest_addoption, golden.pytest_addoption, mutate_plugin.pytest_addoption):
        hook(parser)
    helps = {opt.names()[0]: opt.attrs()["help"] for opt in parser.getgroup("infralab").options}
    assert len(helps) > 10 and "--update-golden" in helps and "--mutants" in helps, helps
    assert [name for name, text in helps.items() if not CJK.search(text)] == [], helps


@pytest.mark.parametrize("lang, words", [("en", "without raising ValueError"), ("zh", "没有抛出 ValueError")])
def test_a_call_that_should_raise_and_does_not_is_told_in_the_runs_language(monkeypatch, lang, words):
    """A hidden test's ``pytest.raises`` that sees no exception: pytest's own "DID NOT RAISE" line is English
    only, so the record's message comes from the catalogue."""
    from infralab.plugin import _short_message
    monkeypatch.setenv("INFRALAB_LANG", lang)
    with pytest.raises(pytest.fail.Exception) as missed:
        with pytest.raises(ValueError):
            pass
    assert words in _short_message(missed) and "DID NOT RAISE" not in _short_message(missed)
