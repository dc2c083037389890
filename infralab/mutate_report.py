"""The committed reports of ``infralab validate --mutate``: one Markdown page (and its numbers as JSON)
per exercise, and a summary table built from every exercise's JSON in the folder."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from infralab.i18n import tr
from infralab.mutate import ExerciseReport, report_json

SUMMARY = "README.md"


def render_exercise(r: ExerciseReport) -> str:
    lines = [f"# {tr('mutate.report_title', exercise=r.exercise)}", "",
             tr("mutate.report_header", reference=r.reference, seed=r.seed, timeout=r.timeout_s,
                seconds=r.duration_s, machine=r.machine, date=r.date), ""]
    if r.capped:
        lines += [tr("mutate.report_capped", tested=r.tested, generated=r.generated), ""]
    lines += ["| generated | tested | killed | by timeout | by crash | equivalent | given | unreached | survivors | "
              "kill rate |", "|---|---|---|---|---|---|---|---|---|---|",
              f"| {r.generated} | {r.tested} | {r.killed} | {r.count('timeout')} | {r.count('crashed')} | "
              f"{r.count('equivalent')} | {r.count('given')} | {r.count('unreached')} | {len(r.survivors)} | "
              f"{r.kill_rate:.1%} |", ""]
    tested, killed = Counter(o.operator for o in r.outcomes), Counter(
        o.operator for o in r.outcomes if o.status in ("killed", "timeout", "crashed"))
    lines += ["| operator | killed / tested |", "|---|---|"]
    lines += [f"| {op} | {killed[op]} / {n} |" for op, n in sorted(tested.items())] + [""]
    if r.reference_failed:
        lines += [f"## {tr('mutate.report_reference_failed')}", ""] + [f"- `{t}`" for t in r.reference_failed] + [""]
    if r.stale:
        lines += [f"## {tr('mutate.report_stale')}", ""] + [f"- {s}" for s in r.stale] + [""]
    for title, outcomes in ((tr("mutate.report_survivors"), r.survivors),
                            (tr("mutate.report_equivalents"), [o for o in r.outcomes if o.status == "equivalent"]),
                            (tr("mutate.report_given"), [o for o in r.outcomes if o.status == "given"]),
                            (tr("mutate.report_unreached"), [o for o in r.outcomes if o.status == "unreached"])):
        lines += [f"## {title} ({len(outcomes)})", ""]
        for o in outcomes:
            lines += [f"### `{o.mutant}` · line {o.line} · {o.operator}: `{o.change}`", ""]
            if o.equivalent_reason:
                lines += [o.equivalent_reason, ""]
            lines += ["```diff", o.diff, "```", ""]
    return "\n".join(lines)


def write_exercise_report(r: ExerciseReport, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / f"{r.exercise}.md"
    page.write_text(render_exercise(r), encoding="utf-8")
    data = report_json(r)
    data["outcomes"] = [o for o in data["outcomes"] if o["status"] in ("survived", "equivalent", "given", "unreached")]
    (folder / f"{r.exercise}.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return page


def write_summary(folder: Path) -> Path:
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    lines = [f"# {tr('mutate.summary_title')}", "", tr("mutate.summary_intro"), "",
             "| exercise | generated | tested | killed | by timeout | equivalent | given | unreached | survivors | kill rate "
             "| seconds | machine |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in rows:
        lines.append(f"| [{d['exercise']}]({d['exercise']}.md) | {d['generated']} | {d['tested']} | {d['killed']} | "
                     f"{d['timeouts']} | {d['equivalent']} | {d.get('given', 0)} | {d.get('unreached', 0)} | {d['survivors']} | "
                     f"{d['kill_rate']:.1%} | "
                     f"{d['duration_s']} | {d['machine']} |")
    total = {k: sum(d.get(k, 0) for d in rows) for k in ("generated", "tested", "killed", "equivalent", "given",
                                                         "unreached", "survivors")}
    if rows:
        judged = total["tested"] - total["equivalent"] - total["given"] - total["unreached"]
        lines.append(f"| **all** | {total['generated']} | {total['tested']} | {total['killed']} | | "
                     f"{total['equivalent']} | {total['given']} | {total['unreached']} | {total['survivors']} | "
                     f"{total['killed'] / max(judged, 1):.1%} | "
                     f"{round(sum(d['duration_s'] for d in rows), 1)} | |")
    page = folder / SUMMARY
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return page
