"""The HTML feedback page in a real browser: headless Chromium (the distribution's package, which
`make test` installs where it can: root and apt-get) renders it, with no console errors, and its
Chinese text in a CJK font. The screenshot stays in build/test-artifacts/ for a person to look at."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.outputs.html import feedback_html
from infralab.record import TestResult, build_record

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_BROWSER = ("no headless Chromium here: `make test` installs it with `apt-get install -y chromium "
              "fonts-noto-cjk` when run as root where apt-get exists; install them to run this test")


def _cjk_font() -> bool:
    fc = shutil.which("fc-list")
    return bool(fc and subprocess.run([fc, ":lang=zh"], capture_output=True, text=True).stdout.strip())


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=60)


def sample_record(course_root: Path) -> dict:
    """A graded record with a pass, a failure with its diagnosis, a skipped test and a flag."""
    course = load_course(course_root)
    tests = [
        TestResult(nodeid="graders/part01_demo/test_double.py::test_double_of_random", name="test_double_of_random",
                   exercise="part01_demo.double", visibility="hidden", outcome="failed",
                   message="Mismatch: output：5 个元素中有 5 个（100.0%）超出容差\n看起来像：返回了 x + 1",
                   diagnosis="返回了 x + 1", seed=7),
        TestResult(nodeid="graders/part01_demo/test_double.py::test_double_of_negative",
                   name="test_double_of_negative", exercise="part01_demo.double", visibility="hidden",
                   outcome="passed", weight=3.0),
        TestResult(nodeid="graders/part01_demo/test_negate.py::test_negate_on_the_gpu", name="test_negate_on_the_gpu",
                   exercise="part01_demo.negate", visibility="hidden", outcome="skipped",
                   message="需要 CUDA GPU；这台机器没有"),
    ]
    record = build_record(course, "submissions/张三", "grade", tests, started="2026-12-03T10:00:00+00:00",
                          duration_s=1.0, flags=[{"kind": "speedup", "detail": "比参考实现快 12 倍"}])
    record["student"] = "张三"
    return record


@pytest.mark.skipif(CHROMIUM is None, reason=NO_BROWSER)
def test_the_chinese_feedback_page_renders_in_chromium_without_console_errors(mini_course, monkeypatch):
    if not _cjk_font():
        pytest.skip("no CJK font (fc-list :lang=zh is empty): apt-get install -y fonts-noto-cjk")
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = ARTIFACTS / "feedback_zh.html"
    page.write_text(feedback_html(sample_record(mini_course)), encoding="utf-8")

    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in ("评分反馈 · 张三", "看起来像：返回了 x + 1", "给教师的提示", "跳过"):
        assert text in dom.stdout, text
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console

    shot = ARTIFACTS / "feedback_zh.png"
    shot.unlink(missing_ok=True)
    done = _chromium(f"--screenshot={shot}", "--window-size=1000,900", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


@pytest.mark.skipif(CHROMIUM is None, reason=NO_BROWSER)
def test_a_gpu_records_page_shows_its_roofline_in_chromium(tmp_path, monkeypatch):
    """The committed H200 bench record's page: the GPU table and the embedded roofline render."""
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the dev extra): no roofline to show")
    import json

    from infralab.outputs.files import write_outputs
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    record = json.loads((ROOT / "benchmarks/results/h200-final-bench-rmsnorm.json").read_text(encoding="utf-8"))
    write_outputs(record, load_course(ROOT), tmp_path)
    page = tmp_path / "feedback.html"
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "GPU 性能" in dom.stdout and "data:image/png;base64," in dom.stdout
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "feedback_roofline_zh.png"
    shot.unlink(missing_ok=True)
    done = _chromium(f"--screenshot={shot}", "--window-size=1000,1400", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
