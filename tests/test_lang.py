"""--lang zh reaches a course's failure messages and diagnoses, visible and hidden (Part 01's sampling;
tests/test_i18n_parts.py runs one visible test per part)."""
from infralab.course import load_course
from infralab.runner import TestRun, run_tests
from tests.test_i18n import CJK


def test_a_part01_mutant_fails_with_a_chinese_message_and_diagnosis():
    course = load_course()
    ex = course.exercise("part01_transformer.sampling")
    record = run_tests(course, TestRun(target="mutant:part01_transformer.sampling:top_p_cuts_inside_ties",
                                       exercises=(ex,), hidden=True,
                                       extra_args=["--lang", "zh", "-k", "tie"]))
    failed = [t for e in record["exercises"] for t in e["tests"] if t["outcome"] == "failed"]
    assert {t["visibility"] for t in failed} == {"visible", "hidden"}, record["output_tail"]
    for t in failed:
        assert "看起来像：" in t["message"] and "实际" in t["message"], t["message"]
        assert t["diagnosis"] and CJK.search(t["diagnosis"]) and "TopPLogitsWarper" in t["diagnosis"], t
