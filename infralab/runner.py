"""Run the course's tests on one target in a fresh pytest process and return the result record.

Every command that needs verdicts (check, grade, validate) goes through :func:`run_tests`, so
the same tests, options and record format serve all of them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infralab.course import Course, Exercise
from infralab.i18n import tr
from infralab.record import read_record


@dataclass
class TestRun:
    """What to run: which exercises, which of their test files, against which target."""

    __test__ = False  # not a pytest test class

    target: str = "exercises"
    exercises: tuple[Exercise, ...] = ()
    visible: bool = True
    hidden: bool = False
    mode: str = "check"
    seed: int | None = None
    seeds: int = 1  # a sweep: seed-dependent tests at this many base seeds (infralab.seeds)
    isolated: bool = False
    soundness: bool = False
    sweep_mutants: bool = False  # soundness mode: the mutants at every seed of the sweep too
    jobs: int = 1
    timeout_s: float | None = None  # per test (pytest-timeout)
    extra_args: list[str] = field(default_factory=list)

    def test_files(self, course: Course) -> list[Path]:
        files = []
        for ex in self.exercises:
            if self.visible:
                files.append(course.root / ex.visible_tests)
            if self.hidden:
                files.append(course.root / ex.hidden_tests)
        return [f for f in files if f.is_file()]


def plugin_args(env: dict[str, str] | None = None) -> list[str]:
    """``-p infralab.plugin`` when pytest would not load our plugin by itself.

    An installed kit registers the plugin as a ``pytest11`` entry point (pyproject.toml); a kit run
    from a checkout without installing it (a GPU machine with its own torch, ``python -m infralab.cli``)
    has no entry point (nor has a run with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), and the child pytest would reject ``--course`` as an unknown option. Naming
    the plugin with ``-p`` when the entry point exists too would register it twice (pluggy refuses)."""
    from importlib.metadata import entry_points
    if (os.environ if env is None else env).get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):  # pytest loads no entry point at all
        return ["-p", "infralab.plugin"]
    if any(ep.value == "infralab.plugin" for ep in entry_points(group="pytest11")):
        return []
    return ["-p", "infralab.plugin"]


def pytest_command(course: Course, run: TestRun, record_path: Path,
                   env: dict[str, str] | None = None) -> list[str]:
    args = [sys.executable, "-m", "pytest", *plugin_args(env), *map(str, run.test_files(course)),
            "--course", str(course.root), "--target", run.target, "--record", str(record_path),
            "--record-mode", run.mode, "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
            "--rootdir", str(course.root), "-o", "addopts=", "-o", "testpaths="]
    if run.seed is not None:
        args += ["--seed", str(run.seed)]
    if run.seeds > 1:
        args += ["--seeds", str(run.seeds)]
    if run.isolated:
        args.append("--isolated")
    if run.soundness:
        args.append("--soundness")
    if run.sweep_mutants:
        args.append("--sweep-mutants")
    if run.jobs > 1:
        args += ["-n", str(run.jobs)]
    if run.timeout_s:
        args += ["--timeout", str(run.timeout_s)]
    return args + run.extra_args


def run_tests(course: Course, run: TestRun, *, env: dict[str, str] | None = None,
              wall_timeout_s: float | None = None) -> dict[str, Any]:
    """Run pytest in a child process; return its record (with pytest's exit code and output tail)."""
    with tempfile.TemporaryDirectory(prefix="infralab-run-") as tmp:
        record_path = Path(tmp) / "record.json"
        child_env = dict(os.environ if env is None else env)
        cmd = pytest_command(course, run, record_path, child_env)
        child_env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
        proc = subprocess.run(cmd, cwd=course.root, env=child_env, capture_output=True, text=True,
                              timeout=wall_timeout_s)
        if not record_path.is_file():
            output = (proc.stdout + proc.stderr)[-4000:]
            raise RuntimeError(tr("check.no_record", code=proc.returncode, output=output))
        record = read_record(record_path)
    record["pytest_exit"] = proc.returncode
    record["output_tail"] = (proc.stdout + proc.stderr)[-4000:]
    return record
