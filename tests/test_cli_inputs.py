"""Bad options and inputs to the kit: one line naming the option or file, the key and what was
expected; a non-zero exit; nothing run. Every case here ends before any test or grading starts."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infralab.cli import main
from infralab.course import load_course
from infralab.errors import CourseError, InfralabError
from infralab.grade import GradeOptions
from infralab.judge.minicourse import kit_root, rmsnorm_course
from infralab.perf.profiles import load_profile

KIT = kit_root()


def one_line_error(capsys, argv: list[str]) -> str:
    """Run the CLI; it must exit non-zero with exactly one line on stderr and nothing on stdout."""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert rc not in (0, None), (argv, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert out == "", out
    return err.strip()


@pytest.mark.parametrize("argv, words", [
    (["grade", "x", "--out", "o", "--call-timeout", "-1"], "--call-timeout"),
    (["grade", "x", "--out", "o", "--call-timeout", "nan"], "--call-timeout"),
    (["grade", "x", "--out", "o", "--timeout", "0"], "--timeout"),
    (["grade", "x", "--out", "o", "--jobs", "0"], "--jobs"),
    (["grade", "x", "--out", "o", "--jobs", "-3"], "--jobs"),
    (["grade", "x", "--out", "o", "--memory", "-4"], "--memory"),
    (["grade", "x", "--out", "o", "--gpu", "--time-cap", "0"], "--time-cap"),
    (["grade", "x", "--out", "o", "--seed", "-1"], "--seed"),
    (["validate", "--jobs", "0"], "--jobs"),
    (["check", "--seed", "x"], "--seed"),
])
def test_bad_numbers_are_refused_at_parse_time(capsys, argv, words):
    err = one_line_error(capsys, argv)
    assert words in err and "expected" in err


def test_options_given_from_python_obey_the_same_rules():
    for bad in (dict(call_timeout_s=-1), dict(budget_s=0), dict(memory_bytes=0), dict(seed=-2)):
        with pytest.raises(InfralabError):
            GradeOptions(**bad)


def test_unknown_parts_exercises_and_targets_are_one_line(capsys, monkeypatch):
    monkeypatch.chdir(KIT)
    err = one_line_error(capsys, ["validate", "--exercise", "rms_norm"])
    assert "--exercise rms_norm" in err and "did you mean rmsnorm?" in err
    err = one_line_error(capsys, ["grade", "x", "--out", "o", "--part", "part01_transfomer"])
    assert "did you mean part01_transformer?" in err
    err = one_line_error(capsys, ["check", "--exercise", "rmsnorm", "--target", "nonsense"])
    assert "--target 'nonsense'" in err


def test_grade_refuses_an_out_file_and_an_empty_class(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(KIT)
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    err = one_line_error(capsys, ["grade", str(tmp_path / "empty"), "--out", str(tmp_path / "file")])
    assert "--out" in err and "file" in err
    err = one_line_error(capsys, ["grade", str(tmp_path / "empty"), "--out", str(tmp_path / "out")])
    assert "empty folder" in err


def broken_course(tmp_path: Path, data: bytes) -> Path:
    root = rmsnorm_course(tmp_path / "course")
    (root / "course.yml").write_bytes(data)
    return root


@pytest.mark.parametrize("name, data, words", [
    ("gbk", "course:\n  id: 课程\n".encode("gbk"), ["UTF-8", "line 2, column 7", "0x"]),
    ("binary", b"course:\n  id: x\x00\x01\n", ["line 2, column 8", "0x00"]),
    ("syntax", b"course:\n  id: [x\nparts: []\n", ["line 3, column"]),
])
def test_a_course_yml_that_is_not_yaml_text_is_one_error_with_line_and_column(capsys, tmp_path, name, data, words):
    root = broken_course(tmp_path, data)
    with pytest.raises(CourseError) as e:
        load_course(root)
    assert str(e.value).startswith(str(root / "course.yml")), e.value
    for w in words:
        assert w in str(e.value), e.value
    err = one_line_error(capsys, ["check", "--course", str(root)])
    assert "course.yml" in err


def test_a_binary_hardware_profile_is_one_error(tmp_path):
    shutil.copyfile(KIT / "hardware_profiles" / "h200.yml", tmp_path / "h200.yml")
    (tmp_path / "h200.yml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(CourseError, match=r"h200.yml: expected .*line 1"):
        load_profile(tmp_path / "h200.yml")
