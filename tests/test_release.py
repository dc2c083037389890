"""``infralab release``: the student version holds no solution, no hidden test, no fixture, and
its visible tests collect and fail cleanly on the stubs; the leak check catches a planted body."""
from __future__ import annotations

import ast
import shutil

import pytest

from infralab.course import load_course
from infralab.errors import InfralabError
from infralab.judge.minicourse import rmsnorm_course
from infralab.release import leak_check, release, write_release


@pytest.fixture
def course(tmp_path):
    return load_course(rmsnorm_course(tmp_path / "course"))


def test_release_ships_no_secrets_and_stubs_fail_cleanly(course, tmp_path):
    report = release(course, tmp_path / "release")
    out = report.out
    assert report.ok, (report.leaks, report.stub_problems)
    assert report.stub_tests == 5
    for secret in ("solutions", "graders", "fixtures"):
        assert not (out / secret).exists()
    assert (out / "exercises/part01_transformer/rmsnorm.py").is_file()
    released = load_course(out)  # the release's course.yml loads without solutions or hidden tests
    assert [ex.id for ex in released.exercises] == ["part01_transformer.rmsnorm"]


def test_leak_check_finds_a_solution_body_in_the_release(course, tmp_path):
    out = tmp_path / "release"
    write_release(course, out)
    assert leak_check(course.root, out) == []
    solution = (course.root / "solutions/part01_transformer/rmsnorm.py").read_text()
    func = next(n for n in ast.parse(solution).body if isinstance(n, ast.FunctionDef) and n.name == "rms_norm")
    copied = ast.get_source_segment(solution, func).replace("def rms_norm", "def my_helper", 1)
    stub = out / "exercises/part01_transformer/rmsnorm.py"
    stub.write_text(stub.read_text() + "\n\n" + copied + "\n")
    leaks = leak_check(course.root, out)
    assert any("solutions/part01_transformer/rmsnorm.py:rms_norm" in leak for leak in leaks), leaks
    (out / "notes.txt").write_bytes((course.root / "graders/part01_transformer/test_rmsnorm.py").read_bytes())
    assert any("copy of graders/part01_transformer/test_rmsnorm.py" in leak for leak in leak_check(course.root, out))


def test_release_refuses_to_overwrite_a_folder_it_did_not_write(course, tmp_path):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious/data.txt").write_text("keep me")
    with pytest.raises(InfralabError, match="not an earlier release"):
        write_release(course, tmp_path / "precious")
    assert (tmp_path / "precious/data.txt").read_text() == "keep me"


def _readme_commands(readme: str) -> list[str]:
    """The commands of the README's first code block (comments stripped)."""
    block = readme.split("```", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_release_readme_commands_work_there_and_grade_refuses(course, tmp_path):
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    shutil.copyfile(root / "pyproject.toml", course.root / "pyproject.toml")
    out = tmp_path / "release"
    write_release(course, out)
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "solutions/" not in readme and "graders/" not in readme and "评分" in readme
    for link in [part.split(")")[0] for part in readme.split("](")[1:]]:
        assert (out / link).exists(), f"the README links {link}, which is not shipped"
    commands = _readme_commands(readme)
    assert commands == ["make test", "make check"]
    venv = Path(sys.executable).parent.parent  # the kit's environment stands in for the student's .venv
    if not (venv / ".installed").is_file():
        pytest.skip("the environment has no make stamp (.installed) to stand in for the student's set-up")
    os.utime(out / "pyproject.toml", (0, 0))  # older than the stamp: make does not reinstall
    env = dict(os.environ, VENV=str(venv), PYTHONPATH=str(root))
    ran = {}
    for command in commands:
        proc = subprocess.run(command, shell=True, cwd=out, env=env, capture_output=True, text=True, timeout=300)
        ran[command] = proc.stdout + proc.stderr
    assert "5 failed" in ran["make test"] and "NotImplementedError" in ran["make test"]  # the stubs' visible tests
    assert "rmsnorm" in ran["make check"] and "Traceback" not in ran["make check"]
    proc = subprocess.run([sys.executable, "-m", "infralab.cli", "grade", str(out / "exercises"), "--out",
                           str(tmp_path / "grades")], cwd=out, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "hidden tests are not in this tree" in proc.stderr
    assert not (tmp_path / "grades").exists()


def test_the_course_release_ships_no_reference_and_nothing_imports_infralab_mistakes(tmp_path):
    """infralab/mistakes (references and known mistakes) is dev-only: a release neither holds nor imports it."""
    from infralab.judge.minicourse import kit_root
    root = kit_root()
    out = tmp_path / "release"
    write_release(load_course(root), out)
    assert not (out / "infralab/mistakes").exists() and (out / "infralab/golden.py").is_file()
    assert leak_check(root, out) == []


def test_leak_check_finds_infralab_mistakes_shipped_imported_or_copied(course, tmp_path):
    from infralab.judge.minicourse import kit_root
    shutil.copytree(kit_root() / "infralab/mistakes", course.root / "infralab/mistakes")
    out = tmp_path / "release"
    write_release(course, out)
    assert leak_check(course.root, out) == []  # written by release: the package stays behind
    (out / "infralab/mistakes").mkdir(parents=True)
    (out / "infralab/mistakes/__init__.py").write_text("")
    tests = out / "exercises/part01_transformer/tests/test_rmsnorm.py"
    tests.write_text("from infralab.mistakes.part01_transformer import rmsnorm\n"
                     "import importlib\nref = importlib.import_module('infralab.mistakes.part01_transformer.ffn')\n"
                     + tests.read_text())
    reference = (course.root / "infralab/mistakes/part01_transformer/rmsnorm.py").read_text()
    (out / "exercises/part01_transformer/helpers.py").write_text(reference.replace("def rms_mistakes", "def helper"))
    leaks = "\n".join(leak_check(course.root, out))
    assert "infralab/mistakes/__init__.py is dev-only" in leaks
    assert "test_rmsnorm.py imports the dev-only infralab.mistakes (line 1)" in leaks
    assert "test_rmsnorm.py imports the dev-only infralab.mistakes (line 3)" in leaks
    assert "helpers.py holds the body of infralab/mistakes/part01_transformer/rmsnorm.py:rms_mistakes" in leaks
