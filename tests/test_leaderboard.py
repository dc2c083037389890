"""`infralab leaderboard` on synthetic records: per-profile rankings, CSV, HTML, Gradescope field."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from infralab.leaderboard import gradescope_leaderboard, rankings, rows_from

ROOT = Path(__file__).resolve().parents[1]


def entry(target, achieved, decision="accept", profile="h200", provisional=False, shape=None, kind="gpu-benchmark",
          flags=(), checks=None, challenge="large"):
    e = {"exercise": "part03_kernels.softmax", "challenge": challenge,
         "workload": {"shape": shape or {"M": 32768, "N": 4096}, "baseline": "eager"},
         "candidate": {"target": target}, "environment": {"device": "NVIDIA H200", "torch": "2.11.0"},
         "evidence": {"kind": kind, "profile": profile, "thresholds": "provisional" if provisional else "calibrated"},
         "metrics": {"achieved": achieved, "unit": "GB/s", "fraction_of_ceiling": achieved / 4228,
                     "ratio_to_baseline": achieved / 1280}, "decision": decision, "level": "pass",
         "flags": list(flags)}
    if checks:
        e["checks"] = checks
    return e


def record(*entries, target="x", started="2026-12-04T10:00:00+00:00"):
    return {"schema": "infralab.record/1", "target": target, "started": started, "perf": list(entries)}


def test_each_submission_ranks_by_its_best_accepted_figure_and_rejections_are_unranked():
    rows = rows_from([record(entry("alice", 3000.0), entry("alice", 3500.0), entry("bob", 3900.0, "reject",
                                                                                  flags=["wall mismatch"])),
                      record(entry("bob", 3200.0)), record(entry("carol", 100.0, "reject"))], "r.json")
    (key, ranked), = rankings(rows).items()
    assert [(r.submission, r.rank, r.achieved) for r in ranked] == [
        ("alice", 1, 3500.0), ("bob", 2, 3200.0), ("carol", None, 100.0)]


def test_profiles_never_share_a_ranking_and_provisional_ones_are_marked():
    rows = rows_from(record(entry("a", 3000.0), entry("a", 2000.0, profile="h100", provisional=True),
                            entry("b", 1900.0, profile="h100", provisional=True)), "r.json")
    ranked = rankings(rows)
    assert sorted(k[0] for k in ranked) == ["h100", "h200"]
    h100 = next(v for k, v in ranked.items() if k[0] == "h100")
    assert [r.submission for r in h100] == ["a", "b"] and all(r.provisional for r in h100)


def test_shapes_rank_apart_and_cpu_checks_and_checks_off_runs_never_rank():
    rows = rows_from(record(entry("a", 3000.0), entry("a", 2000.0, shape={"M": 8, "N": 8}),
                            entry("b", 9999.0, kind="cpu-logic-check"), entry("c", 9999.0, checks="off")), "r.json")
    assert {r.submission for r in rows} == {"a"} and len(rankings(rows)) == 2


def test_the_command_writes_csv_and_a_self_contained_html_page(tmp_path):
    results = tmp_path / "results"
    (results / "sub").mkdir(parents=True)
    (results / "sub" / "a.json").write_text(json.dumps(record(entry("alice", 3500.0))))
    (results / "suite.json").write_text(json.dumps({"environment": {"device": "NVIDIA H200"}, "date": "2026-12-04",
                                                    "entries": [entry("solutions", 3990.0),
                                                                entry("h", 1.0, profile="l4", provisional=True)]}))
    (results / "broken.json").write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "infralab.cli", "leaderboard", str(results), "--out",
                           str(tmp_path / "lb")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "broken.json" in proc.stderr and "2 ranking(s)" in proc.stdout
    rows = list(csv.DictReader((tmp_path / "lb" / "leaderboard.csv").open()))
    assert [(r["profile"], r["submission"], r["rank"]) for r in rows] == [
        ("h200", "solutions", "1"), ("h200", "alice", "2"), ("l4", "h", "1")]
    page = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert "<style>" in page and "http" not in page and "provisional profile" in page and "3,990.0 GB/s" in page


def test_a_folder_without_records_is_one_clear_line_and_a_nonzero_exit(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "infralab.cli", "leaderboard", str(tmp_path), "--out",
                           str(tmp_path / "lb")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no result record with performance entries" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_gradescope_field_has_the_best_accepted_figure_per_challenge():
    field = gradescope_leaderboard(record(entry("a", 3000.0), entry("a", 3500.0), entry("a", 9000.0, "reject"),
                                          entry("a", 2.0, challenge="small", decision="tune")))
    assert field == [{"name": "softmax/large M=32768 N=4096 (h200) GB/s", "value": 3500.0, "order": "desc"}]


def test_results_json_carries_the_leaderboard_only_where_a_gpu_figure_exists():
    from infralab.outputs.gradescope import results_json
    base = {"points": 1.0, "max_points": 1.0, "exercises": [], "environment": {}, "mode": "grade", "flags": [],
            "protections": {}}
    gpu = results_json({**base, **record(entry("a", 3500.0))})
    assert gpu["leaderboard"] == [{"name": "softmax/large M=32768 N=4096 (h200) GB/s", "value": 3500.0,
                                   "order": "desc"}]
    assert "leaderboard" not in results_json({**base, **record(entry("a", 1.0, kind="cpu-logic-check"))})
