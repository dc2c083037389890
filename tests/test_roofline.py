"""The roofline of a bench record (infralab.perf.roofline), drawn from committed H200 records (no GPU
here), written beside the record, named by it, and embedded in the feedback page."""
from __future__ import annotations

import base64
import copy
import json
import sys
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.errors import CourseError
from infralab.outputs.files import write_outputs
from infralab.perf import roofline
from infralab.perf.profiles import load_profiles
from infralab.perf.spec import validate_challenge, work_amounts

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
H200 = load_profiles(ROOT / "hardware_profiles")["h200"]
RMSNORM_RECORD = ROOT / "benchmarks/results/h200-final-bench-rmsnorm.json"  # infralab bench --record, on the H200
SUITE_RESULTS = ROOT / "benchmarks/results/h200-final.json"  # benchmarks/h200_suite.py, every part03 challenge
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def h200_record() -> dict:
    return json.loads(RMSNORM_RECORD.read_text(encoding="utf-8"))


def needs_matplotlib():
    return pytest.importorskip("matplotlib", reason="matplotlib is not installed (the dev extra): the roofline "
                                                    "is not drawn without it")


def test_a_kernel_sits_at_flops_over_bytes_and_its_rate_times_that_intensity():
    (p,) = roofline.points(h200_record()["perf"], COURSE)  # recorded before flops were: read from course.yml
    m, n = 32768, 4096
    intensity = 5 * m * n / (4 * m * n * 2 + n * 2)
    assert p.intensity == pytest.approx(intensity)
    assert p.achieved_tflops == pytest.approx(4089.8e9 * intensity / 1e12)
    assert p.baseline_tflops == pytest.approx(574.62e9 * intensity / 1e12) and p.baseline == "eager"
    suite = roofline.points(json.loads(SUITE_RESULTS.read_text(encoding="utf-8"))["entries"], COURSE)
    matmul = next(q for q in suite if q.label.startswith("matmul/square M=8192"))
    assert matmul.achieved_tflops == pytest.approx(759.45) and matmul.intensity == pytest.approx(2 * 8192 / 6)
    assert len(suite) == 10


def test_the_roof_is_the_profiles_measured_and_datasheet_ceilings():
    roofs = {style: (bw, ceilings) for style, bw, ceilings in roofline._roofs(H200, ["bfloat16", "float32"])}
    assert roofs["measured"] == (4228.0, [("bf16", 737.7)])  # no measured fp32 matmul in the profile
    assert roofs["datasheet"] == (4800.0, [("bf16", 989.0), ("fp32", 67.0)])


def test_a_challenge_may_declare_both_amounts_and_a_bad_second_formula_names_its_key():
    raw = {"workload": "softmax", "shapes": [{"M": 4, "N": 8}], "dtype": "bfloat16", "metric": "bandwidth",
           "bytes": "2*M*N*s", "flops": "5*M*N", "baseline": "eager", "pass": {"fraction": 0.5, "of": "copy_gbps"},
           "challenge": {"fraction": 0.8, "of": "copy_gbps"}}
    c = validate_challenge(Path("course.yml"), "perf[0]", raw)
    assert work_amounts(c, {"M": 4, "N": 8}) == {"bytes": 128.0, "flops": 160.0}
    with pytest.raises(CourseError, match=r"perf\[0\]\.flops"):
        validate_challenge(Path("course.yml"), "perf[0]", {**raw, "flops": "5*M*Q"})
    every = [c for ex in COURSE.exercises for c in ex.perf]
    assert every and all({"bytes", "flops"} <= set(c) for c in every)  # every part03 challenge has a roofline


def test_without_matplotlib_the_roofline_is_skipped_with_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    record = h200_record()
    with pytest.raises(roofline.RooflineUnavailable) as info:
        roofline.draw_beside(record, COURSE, tmp_path / "bench.json")
    assert "matplotlib" in str(info.value) and "\n" not in str(info.value)
    assert "roofline" not in record and not list(tmp_path.iterdir())
    write_outputs(record, COURSE, tmp_path / "student")  # the page goes without the picture
    page = (tmp_path / "student" / "feedback.html").read_text(encoding="utf-8")
    assert "4,089.8 GB/s" in page and "<img" not in page


def test_a_cpu_logic_check_gets_no_roofline_and_no_performance_section(tmp_path):
    record = h200_record()
    record["perf"][0]["evidence"] = {"kind": "cpu-logic-check", "performance_result": False}
    with pytest.raises(roofline.RooflineUnavailable, match="no GPU measurement"):
        roofline.draw(record["perf"], COURSE, tmp_path / "r.png")
    write_outputs(record, COURSE, tmp_path)
    assert "roofline" not in json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert "GB/s" not in (tmp_path / "feedback.html").read_text(encoding="utf-8")


def test_the_bench_record_names_its_roofline_written_beside_it(tmp_path):
    needs_matplotlib()
    record = h200_record()
    line = roofline.draw_beside(record, COURSE, tmp_path / "bench.json")
    png = tmp_path / "bench.roofline.png"
    assert record["roofline"] == png.name and str(png) in line
    assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 20_000


def test_the_feedback_page_embeds_the_roofline_of_a_gpu_record(tmp_path, monkeypatch):
    needs_matplotlib()
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    record = h200_record()
    write_outputs(record, COURSE, tmp_path)
    saved = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    assert saved["roofline"] == "record.roofline.png"
    page = (tmp_path / "feedback.html").read_text(encoding="utf-8")
    assert "GPU 性能" in page and "4,089.8 GB/s" in page and "accept" in page
    embedded = page.split("src='data:image/png;base64,", 1)[1].split("'", 1)[0]
    assert base64.b64decode(embedded) == (tmp_path / "record.roofline.png").read_bytes()


def test_the_page_embeds_only_a_png_named_beside_the_record(tmp_path):
    from infralab.outputs.html import feedback_html
    (tmp_path / "inner").mkdir()
    (tmp_path / "secret.png").write_bytes(PNG_MAGIC + b"not for the page")
    record = copy.deepcopy(h200_record())
    record["roofline"] = "../secret.png"
    assert "<img" not in feedback_html(record, tmp_path / "inner")


def test_infralab_bench_record_writes_the_roofline_beside_it_or_says_why_not(tmp_path, monkeypatch, capsys):
    from infralab import cli
    from infralab.perf import bench
    measured = h200_record()["perf"]  # what the H200 measured, in place of a GPU here
    monkeypatch.setattr(bench, "_profile", lambda args, course: (H200, "NVIDIA H200 matches profile h200"))
    monkeypatch.setattr(bench, "measure", lambda *a, **k: copy.deepcopy(measured))
    path = tmp_path / "out" / "bench.json"
    assert cli.main(["bench", "part03_kernels.rmsnorm", "--record", str(path)]) == 0
    saved = json.loads(path.read_text(encoding="utf-8"))
    out = capsys.readouterr().out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "roofline" not in saved and "matplotlib is not installed" in out
        return
    assert saved["roofline"] == "bench.roofline.png" and (path.parent / saved["roofline"]).is_file()
    assert f"roofline: {path.parent / 'bench.roofline.png'}" in out


def test_infralab_bench_speaks_chinese_on_a_cpu(tmp_path, monkeypatch, capsys):
    from infralab import cli
    from infralab.perf import bench
    monkeypatch.setenv("INFRALAB_LANG", "zh")
    monkeypatch.setattr(bench, "current_device", lambda: None)  # a CPU, even where a GPU is
    assert cli.main(["bench", "part03_kernels.rmsnorm", "--record", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "没有 CUDA GPU" in out and "从来不是性能结果" in out, out
    assert cli.main(["bench", "part03_kernels.rmsnorm", "--challenge", "huge"]) == 0
    assert "没有名为 huge 的性能挑战" in capsys.readouterr().out
