"""Running nbgrader's own commands from the kit's environment.

nbgrader shells out to ``alembic`` by name (its gradebook migrations), so ``.venv/bin/nbgrader``
fails with ``FileNotFoundError: 'alembic'`` unless the environment's ``bin/`` is on PATH. Every
nbgrader command the kit runs or prints goes through here: :func:`run_nbgrader` puts this
Python's ``bin/`` first on PATH, and :func:`printed_command` gives a command line that works
as printed, from any shell (absolute path to this environment's ``infralab``).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from infralab.errors import InfralabError
from infralab.i18n import tr


def bin_dir() -> Path:
    """The ``bin/`` of the environment this kit runs in (where nbgrader and alembic live)."""
    return Path(sys.executable).parent


def tool_env(env: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_nbgrader(course_dir: Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in ``course_dir`` with this environment's programs on PATH."""
    exe = bin_dir() / "nbgrader"
    if not exe.is_file():
        raise InfralabError(tr("routes.nbgrader_missing", path=exe))
    return subprocess.run([str(exe), *args], cwd=course_dir, env=tool_env(), text=True,
                          stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None)


def printed_command(*args: str) -> str:
    """An ``infralab ...`` command line that runs as printed (this environment's infralab, by path)."""
    script = bin_dir() / "infralab"
    head = [str(script)] if script.is_file() else [sys.executable, "-m", "infralab.cli"]
    return shlex.join([*head, *args])
