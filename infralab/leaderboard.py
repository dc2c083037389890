"""``infralab leaderboard RESULTS_DIR --out DIR``: rankings of the GPU performance figures of a
folder of result records, one per (exercise, challenge, shape, hardware profile).

Every perf entry of every record under RESULTS_DIR (``infralab bench --record``, ``infralab
grade``, benchmarks/h200_suite.py's ``h200-<tag>.json``) that is a GPU measurement becomes a
candidate row; per submission the best **accepted** figure ranks, and a submission with no
accepted figure is listed below the ranked ones with its decision, unranked. Figures of different
hardware profiles never share a ranking; a ranking on a provisional (datasheet) profile is marked.
CPU logic checks never rank, and nor do measurements taken with the checks off (what the checks
cost). Writes ``leaderboard.csv`` and ``leaderboard.html`` (one self-contained page) in DIR.

:func:`gradescope_leaderboard` turns one record into Gradescope's ``leaderboard`` field.
"""
from __future__ import annotations

import argparse
import csv
import html
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from infralab.errors import InfralabError
from infralab.i18n import tr

COLUMNS = ("profile", "provisional", "exercise", "challenge", "shape", "rank", "submission", "achieved", "unit",
           "fraction_of_ceiling", "ratio_to_baseline", "baseline", "decision", "level", "flags", "date", "device",
           "driver", "cuda", "torch", "triton", "record")


@dataclass
class Row:
    profile: str
    provisional: bool
    exercise: str
    challenge: str
    shape: str
    submission: str
    achieved: float | None
    unit: str
    fraction_of_ceiling: float | None
    ratio_to_baseline: float | None
    baseline: str
    decision: str
    level: str
    flags: str
    date: str
    device: str
    driver: str
    cuda: str
    torch: str
    triton: str
    record: str
    rank: int | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.profile, self.exercise, self.challenge, self.shape)


def _records(data: Any) -> Iterator[tuple[dict, dict]]:
    """(record-level context, perf entry) pairs of a loaded JSON file in any of the kit's shapes."""
    if isinstance(data, list):
        for item in data:
            yield from _records(item)
    elif isinstance(data, dict):
        if isinstance(data.get("perf"), list):  # infralab.record/1
            ctx = {"target": data.get("target"), "date": data.get("started"), "environment": data.get("environment")}
            for e in data["perf"]:
                if isinstance(e, dict):
                    yield ctx, e
        elif isinstance(data.get("entries"), list):  # benchmarks/h200_suite.py
            ctx = {"target": None, "date": data.get("date"), "environment": data.get("environment")}
            for e in data["entries"]:
                if isinstance(e, dict):
                    yield ctx, e


def rows_from(data: Any, source: str, fallback_date: str = "") -> list[Row]:
    """The GPU perf entries of one loaded record file as rows (CPU checks and checks-off runs left out)."""
    rows = []
    for ctx, e in _records(data):
        ev = e.get("evidence") or {}
        if ev.get("kind") != "gpu-benchmark" or e.get("checks") == "off":
            continue
        m = e.get("metrics") or {}
        env = {**(ctx.get("environment") or {}), **(e.get("environment") or {})}
        wl = e.get("workload") or {}
        rows.append(Row(
            profile=str(ev.get("profile", "?")), provisional=ev.get("thresholds") == "provisional",
            exercise=str(e.get("exercise", "?")), challenge=str(e.get("challenge", "?")),
            shape=" ".join(f"{k}={v}" for k, v in (wl.get("shape") or {}).items()),
            submission=str((e.get("candidate") or {}).get("target") or ctx.get("target") or "?"),
            achieved=m.get("achieved"), unit=str(m.get("unit", "")),
            fraction_of_ceiling=m.get("fraction_of_ceiling"), ratio_to_baseline=m.get("ratio_to_baseline"),
            baseline=str(wl.get("baseline", "")), decision=str(e.get("decision")), level=str(e.get("level", "")),
            flags="; ".join(str(f) for f in e.get("flags") or []),
            date=str(ctx.get("date") or fallback_date), device=str(env.get("device", "")),
            driver=str(env.get("driver", "")), cuda=str(env.get("cuda", "")), torch=str(env.get("torch", "")),
            triton=str(env.get("triton", "")), record=source))
    return rows


def load_rows(results_dir: Path) -> tuple[list[Row], list[str]]:
    """Rows of every *.json under ``results_dir``; (rows, warnings about files that are not records)."""
    import datetime as dt
    rows, warnings = [], []
    for path in sorted(Path(results_dir).rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            warnings.append(tr("perf.leaderboard_bad_record", path=path, error=type(exc).__name__))
            continue
        mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc).isoformat(timespec="seconds")
        rows += rows_from(data, str(path.relative_to(results_dir)), mtime)
    return rows, warnings


def _better(a: Row, b: Row) -> bool:
    """``a`` is the better entry of one submission: accepted first, then the higher figure."""
    return ((a.decision == "accept"), a.achieved or 0.0) > ((b.decision == "accept"), b.achieved or 0.0)


def rankings(rows: Iterable[Row]) -> dict[tuple[str, str, str, str], list[Row]]:
    """Per (profile, exercise, challenge, shape): each submission's best row; accepted rows ranked
    by figure (1 = best), the others after them unranked. Profiles never mix."""
    best: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        per = best.setdefault(r.key, {})
        if r.submission not in per or _better(r, per[r.submission]):
            per[r.submission] = r
    out = {}
    for key in sorted(best):
        chosen = sorted(best[key].values(), key=lambda r: (r.decision != "accept", -(r.achieved or 0.0), r.submission))
        for i, r in enumerate(chosen):
            r.rank = i + 1 if r.decision == "accept" else None
        out[key] = chosen
    return out


def write_csv(ranked: dict[tuple, list[Row]], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for rows in ranked.values():
            for r in rows:
                d = asdict(r)
                w.writerow({c: "" if d[c] is None else d[c] for c in COLUMNS})


_CSS = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;text-align:left}th{background:#f3f3f3}"
        ".reject{color:#a00}.tune{color:#a60}.prov{background:#fff3cd;padding:2px 6px}small{color:#666}")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render_html(ranked: dict[tuple, list[Row]]) -> str:
    e = html.escape
    head = ("rank", "submission", "figure", "% ceiling", "vs baseline", "decision", "flags", "date", "environment")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(tr('perf.lb_title'))}</title>"
             f"<style>{_CSS}</style></head><body><h1>{e(tr('perf.lb_title'))}</h1><p>{e(tr('perf.lb_intro'))}</p>"]
    for (profile, exercise, challenge, shape), rows in ranked.items():
        prov = rows[0].provisional
        mark = f" <span class='prov'>{e(tr('perf.leaderboard_provisional'))}</span>" if prov else ""
        parts.append(f"<h2>{e(exercise)} / {e(challenge)} <small>{e(shape)}</small> &middot; "
                     f"{e(tr('perf.lb_profile'))} {e(profile)}{mark}</h2><table><tr>"
                     + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
        for r in rows:
            env = ", ".join(x for x in (r.device, f"driver {r.driver}" if r.driver else "", f"CUDA {r.cuda}",
                                        f"torch {r.torch}", f"triton {r.triton}") if x)
            ratio = "-" if r.ratio_to_baseline is None else f"{r.ratio_to_baseline:.3f}x {r.baseline}"
            figure = "-" if r.achieved is None else f"{r.achieved:,.1f} {r.unit}"
            parts.append(
                f"<tr class='{e(r.decision)}'><td>{r.rank or '-'}</td><td>{e(r.submission)}</td><td>{e(figure)}</td>"
                f"<td>{_pct(r.fraction_of_ceiling)}</td><td>{e(ratio)}</td>"
                f"<td>{e(r.decision)} <small>{e(r.level)}</small></td><td><small>{e(r.flags[:300])}</small></td>"
                f"<td><small>{e(r.date)}</small></td><td><small>{e(env)}</small></td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def gradescope_leaderboard(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Gradescope's ``leaderboard`` field for one record: one column per (exercise, challenge, shape,
    profile) with the best accepted figure (higher is better); nothing for CPU runs."""
    ranked = rankings(rows_from(record, "record"))
    out = []
    for (profile, exercise, challenge, shape), rows in ranked.items():
        accepted = [r for r in rows if r.decision == "accept" and r.achieved is not None]
        if accepted:
            tag = " provisional" if accepted[0].provisional else ""
            out.append({"name": f"{exercise.split('.')[-1]}/{challenge} {shape} ({profile}{tag}) {accepted[0].unit}",
                        "value": accepted[0].achieved, "order": "desc"})
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results_dir", help=tr("help.leaderboard.results_dir"))
    p.add_argument("--out", required=True, help=tr("help.leaderboard.out"))


def run(args: argparse.Namespace) -> int:
    results = Path(args.results_dir)
    if not results.is_dir():
        raise InfralabError(tr("perf.leaderboard_no_records", path=results))
    rows, warnings = load_rows(results)
    for w in warnings:
        print(w, file=sys.stderr)
    if not rows:
        raise InfralabError(tr("perf.leaderboard_no_records", path=results))
    ranked = rankings(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(ranked, out / "leaderboard.csv")
    (out / "leaderboard.html").write_text(render_html(ranked), encoding="utf-8")
    print(tr("perf.leaderboard_written", rankings=len(ranked), entries=sum(len(v) for v in ranked.values()), out=out))
    return 0
