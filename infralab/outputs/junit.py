"""JUnit XML for one record: a testsuite per exercise, a testcase per test."""
from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from infralab.uses import run_label


def junit_xml(record: dict[str, Any]) -> str:
    suites = ET.Element("testsuites", name=str(record["target"]), tests="0", failures="0")
    n_tests = n_fail = 0
    for ex in record["exercises"]:
        counted = [t for t in ex["tests"]]
        fails = sum(t["outcome"] == "failed" for t in counted)
        suite = ET.SubElement(suites, "testsuite", name=ex["id"], tests=str(len(counted)), failures=str(fails),
                              skipped=str(sum(t["outcome"] == "skipped" for t in counted)))
        for t in counted:
            case = ET.SubElement(suite, "testcase", classname=ex["id"], name=run_label(t) + t["name"],
                                 time=f"{t['duration_s']:.3f}")
            if t["outcome"] == "failed":
                first = (t["message"].splitlines() or ["failed"])[0]
                ET.SubElement(case, "failure", message=first[:500]).text = t["message"]
            elif t["outcome"] == "skipped":
                ET.SubElement(case, "skipped", message=t["message"][:500])
        if ex["status"] == "error" and not counted:
            case = ET.SubElement(suite, "testcase", classname=ex["id"], name="grading")
            ET.SubElement(case, "error", message=ex["first_failure"][:500])
            fails += 1
        n_tests += len(counted)
        n_fail += fails
    suites.set("tests", str(n_tests))
    suites.set("failures", str(n_fail))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
