"""``infralab grade SUBMISSIONS... --out DIR``: grade a class with the hidden tests, in isolation.

Each submission (folder or zip; a folder of them is a class, see :mod:`infralab.judge.intake`)
is staged (exercise modules only), then graded by one pytest run in a child process with
``--isolated --seed N``: the student's code runs in a caged executor, the verdicts in the judge.
Submissions run in parallel on a local pool (``--jobs``, default one per core) or as tasks on a
Ray cluster (``--backend ray [--address ADDR]``; no address starts and stops a local instance).
A submission whose grading crashes gets a record that says so (0 points); the batch goes on.

Outputs, all rendered from the records (:mod:`infralab.outputs`)::

    DIR/gradebook.csv                   one row per student in DIR, a column per exercise, total, date
    DIR/<student>/record.json           the result record
    DIR/<student>/results.json          Gradescope
    DIR/<student>/junit.xml             JUnit XML
    DIR/<student>/feedback.html         feedback page (no hidden test source)

Grading again into the same DIR merges: a student graded again replaces only their own folder
and row; the gradebook lists every student whose record is in DIR, with the date of each one's
grading. A submission intake could not read (or an empty one) is not graded: its record says why.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infralab.course import Course, load_course
from infralab.errors import InfralabError
from infralab.i18n import tr
from infralab.judge.cage import CageLimits
from infralab.judge.intake import Submission, discover, is_results_folder, stage
from infralab.options import positive_int, positive_number, require_positive, seed_int
from infralab.record import build_record, write_record
from infralab.release import require_hidden_tests
from infralab.runner import TestRun, run_tests
from infralab.uses import REFERENCE_SUFFIX, with_reference_parts

VOLATILE = ("started", "duration_s")  # what differs between two gradings of the same submission
CALL_TIMEOUT_S = {False: 20.0, True: 180.0}  # per call; with --gpu a first call compiles and autotunes
BUDGET_S = {False: 180.0, True: 1800.0}  # per exercise; with --gpu the challenges' gate, warm-up and rounds


@dataclass
class GradeOptions:
    exercises: tuple[str, ...] = ()  # exercise ids; empty: all selected by parts
    seed: int = 0
    visible: bool = False  # also run the visible tests
    call_timeout_s: float = 20.0
    budget_s: float = 180.0
    memory_bytes: int = 4 << 30
    hide: list[str] = field(default_factory=list)
    gpu: bool = False  # the executors see one GPU each; gpu tests and performance challenges run in the cage
    time_cap_s: float = 20.0  # with gpu: seconds of sampling per challenge shape (both runners)
    one_block_gate: bool = False  # with gpu: armed batches wait behind a one-block gate, not the filling one

    def __post_init__(self) -> None:  # the same rule as the CLI's option types, for every caller
        require_positive("--call-timeout", self.call_timeout_s)
        require_positive("--timeout", self.budget_s)
        require_positive("--memory", self.memory_bytes)
        require_positive("--time-cap", self.time_cap_s)
        if int(self.seed) < 0:
            raise InfralabError(tr("core.option_error", option="--seed",
                                   problem=tr("intake.expected_int_at_least", minimum=0, value=str(self.seed))))

    def limits(self) -> CageLimits:
        return CageLimits(call_timeout_s=self.call_timeout_s, budget_s=self.budget_s,
                          memory_bytes=self.memory_bytes, hide=list(self.hide), gpu=self.gpu)


def _error_record(course: Course, exercise_ids: list[str], student: str, message: str,
                  kind: str = "grading-error") -> dict[str, Any]:
    """A record for a submission that was not graded: every exercise in error, with the reason."""
    flags = [{"kind": kind, "detail": message[-1500:], "source": "judge"}] if kind else []
    record = build_record(course, student, "grade", [], started=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
                          duration_s=0.0, exercise_ids=exercise_ids, flags=flags)
    for ex in record["exercises"]:
        ex["status"], ex["first_failure"] = "error", message.splitlines()[0][:300] if message else "error"
    record["max_points"] = round(sum(ex["max_points"] for ex in record["exercises"]), 4)
    return record


def grade_one(course_root: str, student: str, staged: str, options: dict[str, Any],
              intake: dict[str, Any], device: str | None = None) -> dict[str, Any]:
    """Grade one staged submission; never raises (a failure is a record with a grading-error flag).

    ``intake`` is :meth:`Submission.report`: its flags and notes go into the record; a submission
    intake could not read is not graded. Plain arguments so the same function runs in a local
    thread or as a Ray task. ``device``: with ``gpu``, the one GPU this worker holds (None: the
    ``CUDA_VISIBLE_DEVICES`` it runs with, as Ray sets it).
    """
    try:
        course = load_course(course_root)
        opts = GradeOptions(**options)
        chosen = [course.exercise(e) for e in opts.exercises] if opts.exercises else list(course.exercises)
    except Exception as e:  # noqa: BLE001 - a broken course.yml: say so in this student's record
        return {"schema": "infralab.record/1", "target": student, "student": student, "mode": "grade",
                "points": 0.0, "max_points": 0.0, "exercises": [], "environment": {}, "protections": {},
                "perf": [], "flags": [{"kind": "grading-error", "detail": f"{type(e).__name__}: {e}",
                                       "source": "judge"}], "submission": {"ignored_files": intake["ignored_files"]}}
    ids = [ex.id for ex in chosen]
    if intake.get("unread"):
        record = _error_record(course, ids, student, tr("intake.not_graded", reason=intake["unread"]), kind="")
        return _with_intake(record, student, intake)
    env = dict(os.environ)
    env["INFRALAB_JUDGE"] = json.dumps(asdict(opts.limits()))
    extra: list[str] = []
    if opts.gpu:  # the judge and its executors see this worker's GPU only; kernels compile, not interpreted
        from infralab.perf.caged import perf_cases
        if device is not None:
            env["CUDA_VISIBLE_DEVICES"] = device
        env.pop("TRITON_INTERPRET", None)
        extra = ["--gpu", "--perf-time-cap", str(opts.time_cap_s),
                 *(["--perf-one-block-gate"] if opts.one_block_gate else []), *perf_cases(course, chosen)]
    run = TestRun(target=staged, exercises=tuple(chosen), visible=opts.visible, hidden=True, mode="grade",
                  seed=opts.seed, isolated=True, extra_args=extra)
    # a safety net only: every exercise's executor budget, plus the judge's own work
    wall = opts.budget_s * max(3, len(chosen)) + 300.0
    try:
        # a capstone is graded again with the reference parts it uses (infralab.uses, docs/grading.md)
        record = with_reference_parts(course, run, _judged(course, run, env, wall), lambda again: _judged(
            course, again, env, opts.budget_s * max(3, len(again.exercises)) + 300.0))
    except subprocess.TimeoutExpired:
        record = _error_record(course, ids, student, f"grading took longer than {wall:g} s and was stopped")
    except Exception as e:  # noqa: BLE001 - fail closed, keep the batch going
        record = _error_record(course, ids, student, f"{type(e).__name__}: {e}")
    return _with_intake(named_after_student(record, staged, student), student, intake)


def _judged(course: Course, run: TestRun, env: dict[str, str], wall: float) -> dict[str, Any]:
    """One isolated pytest run's record; a pytest that did not finish its tests is a grading-error flag."""
    record = run_tests(course, run, env=env, wall_timeout_s=wall)
    record.pop("output_tail", None)  # pytest's summary line holds timings and temp paths
    if record.get("pytest_exit") not in (0, 1):
        record["flags"].append({"kind": "grading-error", "source": "judge",
                                "detail": f"pytest exited with status {record['pytest_exit']}"})
    return record


def named_after_student(record: dict[str, Any], staged: str, student: str) -> dict[str, Any]:
    """The record's tests and perf entries name the student, not the staging folder (whose path differs
    between runs; a leaderboard ranks by this name)."""
    for ex in record.get("exercises", []):
        for t in ex.get("tests", []):
            if t.get("target") == staged:
                t["target"] = student
            elif t.get("target") == staged + REFERENCE_SUFFIX:  # a capstone's run with the reference parts
                t["target"] = student + REFERENCE_SUFFIX
    for e in record.get("perf", []):
        if (e.get("candidate") or {}).get("target") == staged:
            e["candidate"]["target"] = student
    return record


def _with_intake(record: dict[str, Any], student: str, intake: dict[str, Any]) -> dict[str, Any]:
    """The record, named after the student, with what intake found (flags first: they explain zeros)."""
    record["target"] = student
    record["student"] = student
    record["submission"] = {"ignored_files": list(intake["ignored_files"])}
    record["flags"] = [*intake["flags"], *record["flags"]]
    record["notes"] = [*intake["notes"], *record.get("protections", {}).pop("notes", [])]
    return record


def stable(record: dict[str, Any]) -> dict[str, Any]:
    """The record without what legitimately differs between runs (start time, durations)."""
    out = {k: v for k, v in record.items() if k not in VOLATILE}
    out["exercises"] = [{**ex, "tests": [{k: v for k, v in t.items() if k != "duration_s"} for t in ex["tests"]]}
                        for ex in record["exercises"]]
    return out


Task = tuple[str, str, str, dict, list]  # the arguments of grade_one


def run_local(tasks: list[Task], jobs: int, done: Callable[[dict], None], devices: list[str] | None = None,
              grade_fn: Callable[..., dict] = grade_one) -> list[dict]:
    """Grade ``tasks`` on ``jobs`` threads; with ``devices`` (grade --gpu), at most one worker per
    device, each holding its device while it grades (:class:`infralab.gpu_workers.DeviceLease`)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from infralab.gpu_workers import DeviceLease
    lease = DeviceLease(devices) if devices else None

    def work(task: Task) -> dict:
        if lease is None:
            return grade_fn(*task)
        with lease() as device:
            return grade_fn(*task, device=device)

    records = []
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(devices)) if devices else jobs)) as pool:
        futures = [pool.submit(work, t) for t in tasks]
        for fut in as_completed(futures):
            records.append(fut.result())
            done(records[-1])
    return records


class RayStartFailed(InfralabError):
    """Ray could not be started or reached."""


def _ray_init(ray, jobs: int, address: str | None, attempts: int = 2) -> None:
    for attempt in range(attempts):
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:  # records are small: a small object store leaves the machine's memory alone
                ray.init(num_cpus=max(1, jobs), include_dashboard=False, log_to_driver=False,
                         object_store_memory=256 << 20)
            return
        except Exception as e:  # noqa: BLE001 - Ray raises plain Exception when its raylet is slow to start
            ray.shutdown()
            if attempt == attempts - 1:
                raise RayStartFailed(tr("intake.ray_not_started", error=e)) from None


def run_ray(tasks: list[Task], jobs: int, address: str | None, done: Callable[[dict], None],
            gpu: bool = False) -> list[dict]:
    try:
        import ray
    except ImportError:
        raise InfralabError(tr("intake.ray_missing")) from None
    started = False
    if not ray.is_initialized():
        _ray_init(ray, jobs, address)
        started = True
    try:
        if gpu and ray.cluster_resources().get("GPU", 0) < 1:  # tasks asking for a GPU would wait for ever
            raise InfralabError(tr("gpugrade.no_cuda", reason="the Ray cluster offers no GPU"))
        remote = ray.remote(num_cpus=1, num_gpus=1 if gpu else 0, max_retries=0)(grade_one)  # Ray sets the GPU
        pending = [remote.remote(*t) for t in tasks]
        records = []
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            records.append(ray.get(ready[0]))
            done(records[-1])
        return records
    finally:
        if started:
            ray.shutdown()


def grade(course: Course, submissions: list[Submission], out: Path, options: GradeOptions, *, jobs: int = 1,
          backend: str = "local", address: str | None = None,
          on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Stage, grade and write every output; returns the records in submission order."""
    from infralab.outputs import write_outputs
    devices = None
    if options.gpu and backend != "ray":  # before anything is staged: no CUDA GPU is one line, exit 2
        from infralab.gpu_workers import gpu_devices
        devices = gpu_devices()
    out = results_folder(out)
    with tempfile.TemporaryDirectory(prefix="infralab-grade-") as staging:
        options.hide = sorted({*options.hide, str(out), staging, *(str(s.source.resolve().parent) for s in submissions)})
        tasks: list[Task] = []
        for sub in submissions:
            stage(sub, Path(staging), course)
            tasks.append((str(course.root), sub.student, str(sub.staged), asdict(options), sub.report()))

        def done(record: dict) -> None:
            folder = out / record["student"]
            if folder.resolve().parent == out and (folder / "record.json").is_file():  # graded again: old outputs go
                shutil.rmtree(folder)
            try:
                write_outputs(record, course, folder)
            except Exception as e:  # noqa: BLE001 - one student's rendering never stops the batch
                record["flags"].append({"kind": "grading-error", "source": "outputs",
                                        "detail": f"writing the outputs failed: {type(e).__name__}: {e}"})
                write_record(record, out / record["student"] / "record.json")
            if on_done:
                on_done(record)

        if backend == "ray":
            records = run_ray(tasks, jobs, address, done, gpu=options.gpu)
        else:
            records = run_local(tasks, jobs, done, devices)
    order = {s.student: i for i, s in enumerate(submissions)}
    records.sort(key=lambda r: order[r["student"]])
    write_class_gradebook(course, out, list(options.exercises) or [ex.id for ex in course.exercises])
    return records


def results_folder(out: Path | str) -> Path:
    """``--out`` resolved and created; a file, or a folder of submissions or a course, is refused."""
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise InfralabError(tr("intake.out_not_folder", path=out))
    if out.is_dir() and not is_results_folder(out) and any((out / n).exists() for n in ("course.yml", "exercises")):
        raise InfralabError(tr("intake.out_is_submission", path=out))
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_class_gradebook(course: Course, out: Path, exercise_ids: list[str]) -> list[dict]:
    """gradebook.csv from every record in ``out`` (this run's and earlier ones'): nothing is lost.

    Columns: the exercises graded now or in any earlier run into ``out``, in course order.
    """
    from infralab.outputs import write_gradebook
    records = sorted(iter_records(out), key=lambda r: str(r.get("student", "")))
    graded = set(exercise_ids) | {ex["id"] for r in records for ex in r.get("exercises", [])}
    columns = [ex.id for ex in course.exercises if ex.id in graded]
    write_gradebook(records, course, columns, out / "gradebook.csv")
    return records


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("submissions", nargs="*", type=Path,
                   help=tr("help.grade.submissions"))
    p.add_argument("--out", type=Path, help=tr("help.grade.out"))
    p.add_argument("--notebooks", type=Path, default=None, metavar="SUBMITTED_DIR",
                   help=tr("help.grade.notebooks"))
    p.add_argument("--db", default=None, help=tr("help.grade.db"))
    p.add_argument("--part", action="append", default=[], help=tr("help.common.grade_part"))
    p.add_argument("--exercise", action="append", default=[], help=tr("help.common.grade_exercise"))
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help=tr("help.grade.jobs"))
    p.add_argument("--seed", type=seed_int, default=0, help=tr("help.grade.seed"))
    p.add_argument("--visible", action="store_true", help=tr("help.grade.visible"))
    p.add_argument("--call-timeout", type=positive_number, default=None,
                   help=tr("help.grade.call_timeout", cpu=CALL_TIMEOUT_S[False], gpu=CALL_TIMEOUT_S[True]))
    p.add_argument("--timeout", type=positive_number, default=None,
                   help=tr("help.grade.timeout", cpu=BUDGET_S[False], gpu=BUDGET_S[True]))
    p.add_argument("--gpu", action="store_true",
                   help=tr("help.grade.gpu"))
    p.add_argument("--time-cap", type=positive_number, default=20.0,
                   help=tr("help.grade.time_cap"))
    p.add_argument("--one-block-gate", action="store_true", help=tr("help.grade.one_block_gate"))
    p.add_argument("--memory", type=positive_number, default=4.0, help=tr("help.grade.memory"))
    p.add_argument("--backend", choices=("local", "ray"), default="local", help=tr("help.grade.backend"))
    p.add_argument("--address", default=None, help=tr("help.grade.address"))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from infralab.outputs.terminal import class_report, progress

    if args.notebooks is not None:
        from infralab.nbgrader.cli import grade_notebooks_command
        return grade_notebooks_command(args)
    if not args.submissions or args.out is None:
        raise InfralabError(tr("intake.need_submissions"))
    if args.gpu and args.backend != "ray":  # before anything is read or written
        from infralab.gpu_workers import gpu_devices
        gpu_devices()
    course = load_course()
    chosen = course.select(args.part or None, args.exercise or None)
    require_hidden_tests(course, chosen)  # a student release: refuse, never grade on visible tests
    out = results_folder(args.out)
    skipped: list[str] = []
    submissions = discover(args.submissions, exclude=out, skipped=skipped)
    console = Console()
    for line in skipped:
        console.print(line, markup=False, highlight=False)
    if not submissions:
        raise InfralabError(tr("intake.no_submissions", paths=" ".join(map(str, args.submissions))))
    options = GradeOptions(exercises=tuple(ex.id for ex in chosen), seed=args.seed, visible=args.visible,
                           call_timeout_s=args.call_timeout or CALL_TIMEOUT_S[args.gpu],
                           budget_s=args.timeout or BUDGET_S[args.gpu],
                           memory_bytes=int(args.memory * (1 << 30)), gpu=args.gpu,
                           time_cap_s=args.time_cap, one_block_gate=args.one_block_gate)
    with progress(console, tr("intake.grades"), len(submissions)) as step:
        records = grade(course, submissions, out, options, jobs=args.jobs, backend=args.backend,
                        address=args.address,
                        on_done=lambda r: step(r["student"], tr("intake.graded_line", student=r["student"],
                                                                   points=f"{r['points']:g}",
                                                                   max_points=f"{r['max_points']:g}")))
    class_report(console, records, [ex.id for ex in chosen])
    console.print(tr("intake.outputs_in", out=out, count=sum(1 for _ in out.glob("*/record.json"))),
                  markup=False, highlight=False)
    return 0


def iter_records(out: Path) -> Iterable[dict]:
    for path in sorted(Path(out).glob("*/record.json")):
        yield json.loads(path.read_text(encoding="utf-8"))
