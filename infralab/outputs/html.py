"""The feedback page for one student: points, each test's verdict and message, flags.

Self-contained HTML (no scripts, no external resources). It holds test names and messages,
never test source: hidden tests' code stays with the instructor.
"""
from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

from infralab.i18n import language, tr
from infralab.outputs.gradescope import test_points
from infralab.outputs.progress import status_text
from infralab.uses import line_text, run_label

_CSS = """
body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;margin:2rem auto;max-width:60rem;color:#222;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.2rem} .sub{color:#666;margin-top:0}
.total{font-size:2rem;font-weight:600} table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
th,td{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top;font-size:.92rem}
th{background:#f5f5f5} .passed{color:#17723a;font-weight:600} .failed,.error{color:#b3261e;font-weight:600}
.partial{color:#9a6700;font-weight:600} .skipped,.not{color:#777}
pre{white-space:pre-wrap;margin:0;font-size:.85rem;background:#fafafa;padding:.3rem;border-radius:4px}
.diag{color:#7a3e00} .flag{background:#fff4e5;border-left:4px solid #f0a020;padding:.4rem .6rem;margin:.3rem 0}
details{margin-top:1rem;color:#555} img.roofline{max-width:100%;height:auto;border:1px solid #ddd}
"""


def _status_class(status: str) -> str:
    return status.split()[0]


def _submission_section(record: dict[str, Any]) -> list[str]:
    """What intake found in the submission (a misnamed module, an unreadable zip) and its notes,
    above the points: it explains a zero before the student reads the tests."""
    from infralab.i18n import both
    found = [fl for fl in record.get("flags", []) if fl.get("source") == "intake" and fl.get("kind") != "ignored-file"]
    notes = record.get("notes", [])
    if not found and not notes:
        return []
    parts = [f"<h2>{escape(both('intake.submission_heading')).replace(chr(10), ' · ')}</h2>"]
    parts += [f"<div class='flag'><b>{escape(str(fl['kind']))}</b>: {escape(str(fl.get('detail', '')))}</div>"
              for fl in found]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{escape(str(n))}</li>" for n in notes) + "</ul>")
    return parts


def _performance_section(record: dict[str, Any], folder: Path | None) -> list[str]:
    """The GPU measurements of the record, and its roofline (the PNG the record names, from ``folder``,
    embedded so that the page stays one file). Nothing for a record without a GPU figure."""
    from infralab.perf.roofline import gpu_entries
    entries = gpu_entries(record.get("perf") or [])
    if not entries:
        return []
    cols = ("loop.html_exercise", "roofline.html_challenge", "roofline.html_shape", "roofline.html_achieved",
            "roofline.html_ceiling", "roofline.html_baseline", "roofline.html_decision")
    parts = [f"<h2>{escape(tr('roofline.html_heading'))}</h2>",
             "<table><tr>" + "".join(f"<th>{escape(tr(c))}</th>" for c in cols) + "</tr>"]
    for e in entries:
        m, wl = e["metrics"], e.get("workload") or {}
        frac = m.get("fraction_of_ceiling")
        cells = (e.get("exercise", ""), e.get("challenge", ""),
                 ", ".join(f"{k}={v}" for k, v in (wl.get("shape") or {}).items()),
                 f"{m['achieved']:,.1f} {m.get('unit', '')}", "-" if frac is None else f"{100 * frac:.1f}%",
                 f"{m.get('ratio_to_baseline', 0):.3f}x {wl.get('baseline', '')}", e.get("decision", ""))
        parts.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>")
    parts.append("</table>")
    name = record.get("roofline")
    png = Path(folder) / name if folder is not None and isinstance(name, str) and Path(name).name == name \
        and name.endswith(".png") else None  # a bare file name beside the record, nothing else
    if png is not None and png.is_file():
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        alt = escape(tr("roofline.html_alt", profile=entries[0]["evidence"].get("profile", "?")))
        parts.append(f"<p><img class='roofline' alt='{alt}' src='data:image/png;base64,{data}'></p>")
    return parts


def feedback_html(record: dict[str, Any], folder: Path | None = None) -> str:
    """The page of ``record``; ``folder`` is where the record's files lie (its roofline PNG)."""
    lang = "zh-CN" if language() == "zh" else "en"
    total = tr("loop.html_total", points=f"{record['points']:g}", max_points=f"{record['max_points']:g}")
    title = escape(tr("loop.html_title", student=record.get("student", record["target"])))
    parts = [f"<!doctype html><html lang='{lang}'><head><meta charset='utf-8'><title>{title}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{title}</h1>",
             f"<p class='sub'>{escape(tr('loop.html_sub', course=record['course'], mode=record['mode']))}</p>",
             f"<p class='total'>{escape(total)}</p>",
             *_submission_section(record),
             f"<table><tr><th>{tr('loop.html_exercise')}</th><th>{tr('loop.html_tests')}</th>"
             f"<th>{tr('loop.col_points')}</th><th>{tr('loop.col_status')}</th></tr>"]
    for ex in record["exercises"]:
        parts.append(f"<tr><td>{escape(ex['id'])}</td><td>{ex['passed']}/{ex['total']}</td>"
                     f"<td>{ex['points']:g}/{ex['max_points']:g}</td>"
                     f"<td class='{_status_class(ex['status'])}'>{escape(status_text(ex['status']))}</td></tr>")
        for line in ex.get("lines", []):  # a capstone: one score line per run, saying whose parts it ran on
            parts.append(f"<tr class='line'><td colspan='2'>{escape(line_text(ex['id'], line))}</td>"
                         f"<td>{line['points']:g}/{line['max_points']:g}</td><td></td></tr>")
    parts.append("</table>")
    for ex in record["exercises"]:
        parts.append(f"<h2>{escape(ex['id'])}</h2>")
        if ex["status"] == "error":
            parts.append(f"<p class='error'>{escape(ex['first_failure'])}</p>")
        if not ex["tests"]:
            continue
        parts.append(f"<table><tr><th>{tr('loop.html_test')}</th><th>{tr('loop.html_visibility')}</th>"
                     f"<th>{tr('loop.col_points')}</th><th>{tr('loop.html_result')}</th></tr>")
        for t, won, possible in test_points(ex):
            message = f"<pre>{escape(t['message'])}</pre>" if t["message"] and t["outcome"] != "passed" else ""
            diag = t.get("diagnosis")
            if diag and diag not in t["message"]:
                message += f"<p class='diag'>{escape(tr('core.looks_like', diagnosis=diag))}</p>"
            parts.append(f"<tr><td>{escape(run_label(t) + t['name'])}{message}</td>"
                         f"<td>{escape(tr('loop.visibility_' + t['visibility']))}</td>"
                         f"<td>{won:.3g}/{possible:.3g}</td>"
                         f"<td class='{_status_class(t['outcome'])}'>{escape(tr('loop.outcome_' + t['outcome']))}</td></tr>")
        parts.append("</table>")
    parts += _performance_section(record, folder)
    if record["flags"]:
        parts.append(f"<h2>{tr('loop.html_flags')}</h2>")
        for fl in record["flags"]:
            parts.append(f"<div class='flag'><b>{escape(fl['kind'])}</b>: {escape(str(fl.get('detail', '')))}</div>")
    env = record["environment"]
    parts.append(f"<details><summary>{tr('loop.html_environment')}</summary><pre>"
                 + escape("\n".join(f"{k}: {v}" for k, v in env.items()))
                 + "\n\n" + escape("\n".join(f"{k}: {v}" for k, v in record["protections"].items()))
                 + "</pre></details></body></html>\n")
    return "".join(parts)
