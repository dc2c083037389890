"""Every check a student can fail in a test speaks the run's language.

The course's tests (visible ``exercises/*/tests/``, hidden ``graders/``) check a student's answer
through ``infralab.testing`` (``assert_close``, ``assert_equal``, ``expect(condition, key,
**fields)``), whose messages come from the catalogue (infralab/i18n). A plain ``assert`` would
show a student English text (or pytest's ``assert x == y`` with no words at all) under ``--lang
zh``, so this scan fails on:

- any ``assert`` statement, with or without a message (``expect`` replaces it);
- ``raise AssertionError(...)``/``pytest.fail(...)``/``Mismatch(...)`` given a string literal or
  f-string (a ``Mismatch`` takes ``tr(key, ...)``);
- an ``expect(...)`` whose key is not a literal key of the catalogue (or a ``tr(...)`` whose literal
  key is not one), or whose keyword fields differ from the ``{fields}`` of its English text (a typo there would only
  surface, as a KeyError, when a student's answer fails).

A check of the test's own setup (not of the answer: "the test's YaRN config still reaches the
ramp") may stay a plain assert when its line carries the comment ``# setup check``; a student
never trips it with any answer. An AST scan of about 80 files: well under a second.
"""
import ast
from pathlib import Path

from infralab.i18n import catalog, fields

ROOT = Path(__file__).resolve().parents[1]
SETUP_MARK = "# setup check"


def course_test_files(root: Path) -> list[Path]:
    return sorted([*root.glob("graders/*/*.py"), *root.glob("exercises/*/tests/*.py")])


def _is_text(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):  # "..." + detail, "..." % values
        return _is_text(node.left) or _is_text(node.right)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _called(node: ast.Call) -> str | None:
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)


def _imports_expect(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "infralab.testing" and
               any(a.name == "expect" for a in n.names) for n in ast.walk(tree))


def _is_pytest_fail(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Name) or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                                          and func.value.id == "pytest")


def _catalogue_problem(key: ast.AST | None, keywords: list[ast.keyword],
                       messages: dict[str, tuple[str, str]]) -> str | None:
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return "the message key is not a string literal"
    key = key.value
    if key not in messages:
        return f"no catalogue key {key!r}"
    if any(k.arg is None for k in keywords):
        return None  # **fields: cannot be checked here
    given = {k.arg for k in keywords} - {"lang"}
    wanted = fields(messages[key][0])
    if given != wanted:
        return f"{key!r} formats {sorted(wanted)}, given {sorted(given)}"
    return None


def untranslated_checks(path: Path, root: Path = ROOT) -> list[str]:
    """``path:line: what`` (path relative to ``root``) of each check in the file that would show a
    student text outside the catalogue."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    messages = catalog()
    found = []

    def report(node: ast.AST, what: str) -> None:
        if SETUP_MARK not in lines[node.lineno - 1]:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {what}")

    tree = ast.parse(text, filename=str(path))
    keyed = {"tr"} | ({"expect"} if _imports_expect(tree) else set())  # a file's own expect() is not the kit's
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            report(node, "plain assert" if node.msg is None else "assert with a message (use expect)")
        elif isinstance(node, ast.Call):
            called = _called(node)
            if called in ("AssertionError", "fail") and (called != "fail" or _is_pytest_fail(node)) \
                    and any(_is_text(a) for a in node.args):
                report(node, f"{called}(...) with text outside the catalogue")
            elif called == "Mismatch" and node.args and _is_text(node.args[0]):
                report(node, "Mismatch(...) with text outside the catalogue (use tr)")
            elif called in keyed:
                key = node.args[1 if called == "expect" else 0: 2 if called == "expect" else 1]
                if called == "tr" and key and not isinstance(key[0], ast.Constant):
                    continue  # tr(note): a key chosen from the test's own table of keys; expect() names its key
                problem = _catalogue_problem(key[0] if key else None, node.keywords, messages)
                if problem:
                    report(node, f"{called}: {problem}")
    return found


def test_every_check_in_the_course_tests_speaks_the_run_language():
    sources = course_test_files(ROOT)
    assert len(sources) > 50, "the scan found too few test files: the globs are wrong"
    found = [hit for path in sources for hit in untranslated_checks(path)]
    assert not found, (f"{len(found)} checks show a student text outside the catalogue "
                       "(write expect(condition, key, **fields) with the key in infralab/i18n):\n" + "\n".join(found))


def test_the_scan_finds_each_kind_of_untranslated_check(tmp_path):
    src = tmp_path / "case.py"
    src.write_text(
        'from infralab.testing import expect\n'
        'assert got == 3, "expected 3"\n'
        'assert got == 3\n'
        'raise AssertionError(f"got {got}")\n'
        'pytest.fail("refused")\n'
        'expect(got == 3, "no.such.key")\n'
        'expect(got == 3, "loop.not_equal", name="x", expected=3)\n'
        'expect(got == 3, key)\n'
        'expect(got == 3, "loop.not_equal", name="x", expected=3, got=got)\n'
        'assert reached(config)  # setup check: the test still reaches the branch\n'
        'raise Mismatch(tr("loop.not_equal", name="x", expected=3, got=got))\n'
        'self.fail("a state machine helper", got, 3)\n'
        'raise Mismatch(f"got {got}", ("a label", "标签"))\n'
        'raise Mismatch("expected " + str(3))\n', encoding="utf-8")
    hits = untranslated_checks(src, tmp_path)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [2, 3, 4, 5, 6, 7, 8, 13, 14], hits
