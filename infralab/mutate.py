"""``infralab validate --mutate``: find what the hidden tests miss by mutating the reference solution.

For each exercise: generate the mutants of ``solutions/<part>/<exercise>.py``
(:mod:`infralab.mutants_ast`), write each to a file, and run the exercise's hidden tests on the
reference and then on every mutant in one pytest session (:mod:`infralab.mutate_plugin`), a mutant
stopping at its first failing test. A test that runs past the per-test timeout fails (pytest-timeout)
and so kills its mutant; a mutant that crashes the session, or stalls it past three timeouts, is
killed too, and the run goes on from the next mutant in a new session.

A survivor is a hole in the hidden tests unless an author reviewed it as *equivalent* (it computes
the same results as the reference for every input the specification allows) in
``fixtures/mutation/equivalent.yml``::

    - exercise: part01_transformer.rmsnorm
      mutant: constant:14:60:0            # operator:line:column:occurrence
      line: "h = h * torch.rsqrt(...)"    # the reference line the mutant edits (stripped)
      reason: why no input can tell it from the reference

A mutant whose statement no hidden test executes on this machine (traced while the reference's tests
run, infralab.mutate_reach) is *unreached*, not a survivor: a GPU-only branch under the CPU interpreter,
say. It is listed with its diff and left out of the kill rate; the GPU's hidden tests are what reach it.

A mutant of code the exercise's stub gives the student verbatim (a signature's default, a dataclass
field, a constant, a helper implemented in full: infralab.mutate_given) is *given*: no student writes
that code, so it is no hole either; it is listed and left out of the kill rate too.

An entry whose line no longer reads so in the reference, whose mutant is no longer generated, or
whose mutant is killed is *stale*. The kill rate is killed / (tested - equivalent - given - unreached).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from infralab.course import Course, Exercise
from infralab.errors import InfralabError
from infralab.i18n import tr
from infralab.mutants_ast import Mutant, generate
from infralab.mutate_given import is_given
from infralab.mutate_reach import reached
from infralab.runner import TestRun, pytest_command

EQUIVALENTS = Path("fixtures/mutation/equivalent.yml")
REPORTS = Path("benchmarks/results/mutation")
DEFAULT_TIMEOUT_S = 10.0
STALL_FACTOR = 3  # a session with no progress for this many per-test timeouts is killed


@dataclass
class Equivalent:
    exercise: str
    mutant: str
    line: str
    reason: str


@dataclass
class Outcome:
    """What the hidden tests did to one mutant."""

    mutant: str  # id
    operator: str
    line: int
    change: str
    status: str  # killed | timeout | crashed | survived | equivalent | given | unreached
    killed_by: str = ""  # the first failing test
    message: str = ""
    tests_run: int = 0
    diff: str = ""
    equivalent_reason: str = ""


@dataclass
class ExerciseReport:
    exercise: str
    reference: str
    generated: int
    tested: int
    seed: int
    timeout_s: float
    duration_s: float
    machine: str
    date: str
    outcomes: list[Outcome] = field(default_factory=list)
    reference_failed: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # reasons, one per stale equivalent entry
    capped: bool = False

    def count(self, *statuses: str) -> int:
        return sum(o.status in statuses for o in self.outcomes)

    @property
    def killed(self) -> int:
        return self.count("killed", "timeout", "crashed")

    @property
    def survivors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "survived"]

    @property
    def kill_rate(self) -> float:
        judged = self.tested - self.count("equivalent", "given", "unreached")
        return self.killed / judged if judged else 1.0

    @property
    def clean(self) -> bool:
        return not self.survivors and not self.stale and not self.reference_failed


# --- the reviewed list of equivalent mutants

def load_equivalents(path: Path) -> list[Equivalent]:
    """The reviewed list; a malformed file is an InfralabError naming the file and the entry."""
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InfralabError(tr("mutate.equivalents_unreadable", file=path, error=str(e).splitlines()[0])) from None
    if not isinstance(data, list):
        raise InfralabError(tr("mutate.equivalents_bad_entry", file=path, index=0, keys="exercise, mutant, line, reason"))
    out = []
    for i, entry in enumerate(data):
        keys = ("exercise", "mutant", "line", "reason")
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry[k].strip() for k in keys):
            raise InfralabError(tr("mutate.equivalents_bad_entry", file=path, index=i, keys=", ".join(keys)))
        out.append(Equivalent(**{k: entry[k] for k in keys}))
    return out


# --- choosing and running the mutants

def select(mutants: list[Mutant], cap: int | None) -> list[Mutant]:
    """At most ``cap`` mutants, chosen by a hash of their ids (stable: the same source gives the
    same choice, and a new mutant does not reshuffle the others), kept in source order."""
    if cap is None or len(mutants) <= cap:
        return mutants
    chosen = set(sorted((hashlib.sha1(m.id.encode()).hexdigest(), m.id) for m in mutants)[:cap])
    ids = {i for _, i in chosen}
    return [m for m in mutants if m.id in ids]


def _diff(reference: str, mutant: Mutant, path: str) -> str:
    old, new = reference.splitlines(), mutant.source.splitlines()
    lines = [f"--- {path}:{mutant.line}", f"+++ mutant {mutant.id}"]
    for i in range(len(old)):  # mutants keep the line count: compare line by line
        if i >= len(new) or old[i] != new[i]:
            lines += [f"-{old[i]}", f"+{new[i] if i < len(new) else ''}"]
    return "\n".join(lines)


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            pass
    return out


def _session(course: Course, ex: Exercise, targets: list[dict[str, str]], reference_failed: set[str],
             workdir: Path, n: int, seed: int, timeout_s: float) -> tuple[list[dict[str, Any]], str | None]:
    """Run one pytest session over ``targets``; its events, and why it ended early (or None)."""
    progress = workdir / f"progress-{n}.jsonl"
    manifest = workdir / f"manifest-{n}.json"
    manifest.write_text(json.dumps({"targets": targets, "progress": str(progress),
                                    "reference_failed": sorted(reference_failed),
                                    "reference_path": str(course.root / "solutions" / ex.module_path)}),
                        encoding="utf-8")
    run = TestRun(target="solutions", exercises=(ex,), visible=False, hidden=True, mode="validate", seed=seed,
                  timeout_s=timeout_s, extra_args=["-p", "infralab.mutate_plugin", "--mutants", str(manifest),
                                                   "-p", "no:randomly"])
    cmd = pytest_command(course, run, workdir / f"record-{n}.json")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with open(workdir / f"output-{n}.txt", "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=course.root, env=env, stdout=out, stderr=subprocess.STDOUT)
        last, size = time.monotonic(), -1
        while proc.poll() is None:
            time.sleep(0.2)
            now_size = progress.stat().st_size if progress.is_file() else 0
            if now_size != size:
                last, size = time.monotonic(), now_size
            elif time.monotonic() - last > STALL_FACTOR * timeout_s + 60:
                proc.kill()
                proc.wait()
                return _events(progress), "hung"
    events = _events(progress)
    if events and events[-1].get("event") == "end":
        return events, None
    return events, f"crashed (exit {proc.returncode})"


def run_exercise(course: Course, ex: Exercise, *, seed: int = 0, cap: int | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, equivalents: list[Equivalent] = (),
                 log: Callable[[str], None] = lambda _: None) -> ExerciseReport:
    t0 = time.perf_counter()
    ref_path = course.root / "solutions" / ex.module_path
    rel = str(Path("solutions") / ex.module_path)
    reference = ref_path.read_text(encoding="utf-8")
    stub_path = course.root / "exercises" / ex.module_path
    stub = stub_path.read_text(encoding="utf-8") if stub_path.is_file() else ""
    mutants = generate(reference)
    chosen = select(mutants, cap)
    report = ExerciseReport(exercise=ex.id, reference=rel, generated=len(mutants), tested=len(chosen), seed=seed,
                            timeout_s=timeout_s, duration_s=0.0, machine=machine(), capped=len(chosen) < len(mutants),
                            date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    by_key = {f"m{i:04d}": m for i, m in enumerate(chosen)}
    with tempfile.TemporaryDirectory(prefix="infralab-mutate-") as tmp:
        workdir = Path(tmp)
        targets = [{"key": "reference", "target": "solutions"}]
        for key, m in by_key.items():
            path = workdir / ex.part / f"{key}.py"
            path.parent.mkdir(exist_ok=True)
            path.write_text(m.source, encoding="utf-8")
            targets.append({"key": key, "target": f"mutant:{ex.id}:{path}"})
        results: dict[str, dict[str, Any]] = {}
        reference_failed: set[str] = set()
        executed: set[int] | None = None  # lines of the reference its tests ran (None: not traced)
        n = 0
        while targets:
            events, ended = _session(course, ex, targets, reference_failed, workdir, n, seed, timeout_s)
            for e in events:
                if e.get("event") == "coverage":
                    executed = (executed or set()) | set(e["lines"])
                if "key" not in e:
                    continue
                r = results.setdefault(e["key"], {"tests": 0, "failed": None})
                if e["event"] == "start":
                    r["tests"] += 1
                elif e["event"] == "failed":
                    r["failed"] = r["failed"] or e
                    if e["key"] == "reference":
                        reference_failed.add(e["test"])
            if ended is None:
                break
            started = [e["key"] for e in events if e.get("event") == "start"]
            if not started:
                raise InfralabError(tr("mutate.session_failed", exercise=ex.id, why=ended,
                                       output=(workdir / f"output-{n}.txt").read_text(encoding="utf-8")[-2000:]))
            culprit = started[-1]
            if culprit == "reference":
                raise InfralabError(tr("mutate.reference_crashed", exercise=ex.id, why=ended))
            results[culprit]["crash"] = ended
            log(tr("mutate.mutant_crashed", exercise=ex.id, mutant=by_key[culprit].id, why=ended))
            done = {t["key"] for t in targets[: [t["key"] for t in targets].index(culprit) + 1]}
            targets = [t for t in targets if t["key"] not in done]
            n += 1
    report.reference_failed = sorted(reference_failed)
    lines = reference.splitlines()
    marked = {(q.exercise, q.mutant): q for q in equivalents  # an entry whose line changed is stale, not honoured
              if q.exercise == ex.id and any(m.id == q.mutant and lines[m.line - 1].strip() == q.line.strip()
                                             for m in chosen)}
    for key, m in by_key.items():
        r = results.get(key, {"tests": 0, "failed": None})
        o = Outcome(mutant=m.id, operator=m.operator, line=m.line, change=m.change, status="survived",
                    tests_run=r["tests"])
        if r.get("crash"):
            o.status, o.message = ("timeout" if r["crash"] == "hung" else "crashed"), r["crash"]
        elif r["failed"] is not None:
            f = r["failed"]
            o.status = "timeout" if f.get("timeout") else "killed"
            o.killed_by, o.message = f["test"], f.get("message", "")
        elif (ex.id, m.id) in marked:
            o.status, o.equivalent_reason = "equivalent", marked[(ex.id, m.id)].reason
        elif is_given(reference, stub, m.line, m.col):
            o.status = "given"
        elif executed is not None and not reached(reference, m.line, m.col, executed):
            o.status = "unreached"
        if o.status in ("survived", "equivalent", "given", "unreached"):
            o.diff = _diff(reference, m, rel)
        report.outcomes.append(o)
    report.stale = stale_entries(ex.id, reference, mutants, report.outcomes, equivalents)
    report.duration_s = round(time.perf_counter() - t0, 1)
    return report


def stale_entries(exercise: str, reference: str, mutants: list[Mutant], outcomes: list[Outcome],
                  equivalents: list[Equivalent]) -> list[str]:
    """Why each of the exercise's equivalent entries is stale (no longer describes a surviving mutant)."""
    lines = reference.splitlines()
    generated = {m.id: m for m in mutants}
    status = {o.mutant: o.status for o in outcomes}
    out = []
    for q in equivalents:
        if q.exercise != exercise:
            continue
        m = generated.get(q.mutant)
        if m is None:
            out.append(tr("mutate.stale_missing", mutant=q.mutant))
        elif lines[m.line - 1].strip() != q.line.strip():
            out.append(tr("mutate.stale_line", mutant=q.mutant, line=m.line, now=lines[m.line - 1].strip(),
                          was=q.line.strip()))
        elif status.get(q.mutant) in ("killed", "timeout", "crashed"):
            out.append(tr("mutate.stale_killed", mutant=q.mutant))
    return out


def machine() -> str:
    import torch
    return (f"{os.cpu_count()}-core {platform.machine()} {platform.system()}, Python {platform.python_version()}, "
            f"torch {torch.__version__}")


# --- the command

def add_arguments(p: Any) -> None:
    p.add_argument("--mutate", action="store_true",
                   help=tr("help.validate.mutate"))
    p.add_argument("--max-mutants", default=None, help=tr("help.validate.max_mutants"))
    p.add_argument("--mutant-timeout", default=str(DEFAULT_TIMEOUT_S),
                   help=tr("help.validate.mutant_timeout"))
    p.add_argument("--equivalents", default=None, help=tr("help.validate.equivalents", path=EQUIVALENTS))
    p.add_argument("--report-dir", default=None, help=tr("help.validate.report_dir", path=REPORTS))
    p.add_argument("--no-report", action="store_true", help=tr("help.validate.no_report"))


def _positive(text: str | None, kind: type, key: str) -> Any:
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InfralabError(tr(key, value=text))
    return value


def command(course: Course, exercises: tuple[Exercise, ...], args: Any) -> int:
    """``infralab validate --mutate``: exit 1 when a non-equivalent mutant survives or an entry is stale."""
    from rich.console import Console
    from rich.table import Table

    cap = _positive(args.max_mutants, int, "mutate.bad_cap")
    timeout_s = _positive(args.mutant_timeout, float, "mutate.bad_timeout")
    seed = getattr(args, "seed", None)
    console = Console()
    reports = run(course, exercises, seed=0 if seed is None else seed, cap=cap, timeout_s=timeout_s,
                  equivalents_path=course.root / (args.equivalents or EQUIVALENTS),
                  report_dir=None if args.no_report else course.root / (args.report_dir or REPORTS),
                  log=lambda line: console.print(line, markup=False, highlight=False))
    table = Table(title=tr("mutate.table_title", course=course.id))
    table.add_column("exercise", no_wrap=True)
    for col in ("tested", "killed", "timeout", "equiv.", "given", "unreached", "holes", "stale", "rate", "s"):
        table.add_column(col, no_wrap=True)
    for r in reports:
        table.add_row(r.exercise, str(r.tested), str(r.killed), str(r.count("timeout")), str(r.count("equivalent")),
                      str(r.count("given")), str(r.count("unreached")),
                      str(len(r.survivors)), str(len(r.stale)), f"{r.kill_rate:.1%}", str(r.duration_s))
    console.print(table)
    for r in reports:
        for o in r.survivors:
            console.print(f"{r.exercise} {o.mutant} ({o.operator}: {o.change})\n{o.diff}", markup=False, highlight=False)
        for s in r.stale:
            console.print(f"{r.exercise}: {s}", markup=False, highlight=False)
    return 0 if all(r.clean for r in reports) else 1


def run(course: Course, exercises: tuple[Exercise, ...], *, seed: int, cap: int | None, timeout_s: float,
        equivalents_path: Path, report_dir: Path | None, log: Callable[[str], None]) -> list[ExerciseReport]:
    from infralab.mutate_report import write_exercise_report, write_summary

    equivalents = load_equivalents(equivalents_path)
    reports = []
    for ex in exercises:
        report = run_exercise(course, ex, seed=seed, cap=cap, timeout_s=timeout_s, equivalents=equivalents, log=log)
        reports.append(report)
        log(tr("mutate.progress", exercise=ex.id, killed=report.killed, tested=report.tested,
               survivors=len(report.survivors), equivalent=report.count("equivalent"), given=report.count("given"),
               unreached=report.count("unreached"),
               rate=f"{report.kill_rate:.1%}", seconds=report.duration_s))
        if report_dir is not None:
            write_exercise_report(report, report_dir)
    if report_dir is not None:
        write_summary(report_dir)
    return reports


def report_json(report: ExerciseReport) -> dict[str, Any]:
    data = asdict(report)
    data.update(killed=report.killed, kill_rate=report.kill_rate, survivors=len(report.survivors),
                equivalent=report.count("equivalent"), given=report.count("given"), unreached=report.count("unreached"),
                timeouts=report.count("timeout"), crashed=report.count("crashed"))
    return data

