"""The executor's cage, judge side: its file tree, its limits, starting and killing it.

One :class:`Cage` per implementation under test. It builds a fresh tree::

    /tmp/infralab-judge-XXXX/       root, 0711 (no listing)
        lib/                        root, read-only for the executor
            kit/  boot.py executor.py wire.py
                infralab/           guards.py triton_watch.py distributed/ errors.py
            code/<package>/partNN_*/*.py    the allowlisted modules only
            boot.json executor.json
        home/                       the executor's uid, its only writable folder (HOME, TMPDIR)

and starts ``unshare --net --mount --pid --ipc --cgroup --fork --kill-child python boot.py``: no
network, a root file system of its own (the system's folders, Python and its tree; the course
root, /root, /tmp, the results folder are not in it, and /proc/self/mountinfo names none of
them), its own PID space (it cannot see or signal the judge; killing the namespace's first
process kills every process the student started), its own System V IPC objects (gone with it),
resource limits per process, a memory cgroup for the whole process tree where the machine
offers one (:mod:`infralab.judge.cgroup`), and its own unprivileged uid (unique per executor,
so RLIMIT_NPROC counts only this student's processes). What could not be applied on this
platform is said in :meth:`Cage.protections`, as missing, with the reason.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from infralab.i18n import tr
from infralab.judge.cgroup import MemoryGroup, memory_cgroup_unavailable
from infralab.judge.config import JudgeConfig
from infralab.triton_env import fp32_dot_env

KIT_FILES = ("boot.py", "executor.py", "wire.py", "perf_ops.py")
PERF_FILES = ("__init__.py", "checked.py", "workloads.py", "kernel_audit.py", "device_gate.py")  # what perf_ops.py imports
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt")  # the host folders in the executor's root (read-only)
UNSHARE = ("unshare", "--net", "--mount", "--pid", "--ipc", "--cgroup", "--fork")
_uid_counter = iter(range(10**6))


@dataclass
class CageLimits:
    """Everything configurable about the cage; ``INFRALAB_JUDGE`` (JSON) overrides the defaults."""

    call_timeout_s: float = 20.0  # wall clock per call into the student's code (import included)
    budget_s: float = 180.0  # wall clock for all calls of one exercise (each has an executor of its own)
    memory_bytes: int = 4 << 30  # RLIMIT_AS per process (not with CUDA), and the tree's cgroup by default
    tree_memory_bytes: int | None = None  # the memory cgroup of the whole process tree (None: memory_bytes)
    nproc: int = 64  # RLIMIT_NPROC for the executor's own uid (threads count)
    nofile: int = 256
    fsize_bytes: int = 16 << 20
    output_cap_bytes: int = 64 << 10  # what is kept of the executor's stdout/stderr
    threads: int = 1  # torch threads in the executor (repeatable results, fair --jobs)
    hide: list[str] = field(default_factory=list)  # more folders to hide (the results folder, the class)
    gpu: bool = False  # grade --gpu: the executor sees the judge's CUDA_VISIBLE_DEVICES and moves tensors there

    @classmethod
    def from_env(cls) -> "CageLimits":
        given = json.loads(os.environ.get("INFRALAB_JUDGE", "{}") or "{}")
        known = {k: v for k, v in given.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _namespaces_work() -> str | None:
    """None if ``unshare`` can make our namespaces here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "not running as root: namespaces and the user switch need root"
    if shutil.which("unshare") is None:
        return "the unshare command is missing"
    try:
        proc = subprocess.run([*UNSHARE, "true"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare failed: {e}"
    return None if proc.returncode == 0 else f"unshare failed: {proc.stderr.decode(errors='replace')[:200]}"


_NAMESPACES: list[str | None] = []


def namespaces_unavailable() -> str | None:
    if not _NAMESPACES:
        _NAMESPACES.append(_namespaces_work())
    return _NAMESPACES[0]


class Drain(threading.Thread):
    """Reads the executor's stdout/stderr to the end, keeping only the first ``cap`` bytes."""

    def __init__(self, stream, cap: int):
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(1 << 20) if hasattr(self.stream, "read1") else self.stream.read(1 << 20)
            if not chunk:
                return
            self.total += len(chunk)
            room = self.cap - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]


class Cage:
    def __init__(self, code: dict[str, Path], package: str, config: JudgeConfig, limits: CageLimits):
        """``code``: relative path in the tree (``exercises/part01_x/m.py``) -> source file to copy."""
        self.limits = limits
        self.course_root = Path(config.course_root).resolve()
        self.namespaces_problem = namespaces_unavailable()
        self.cgroup_problem = memory_cgroup_unavailable() if self.namespaces_problem is None else \
            tr("cage.no_cgroup_platform")
        self.group: MemoryGroup | None = None
        self.oom_kills = 0  # processes of the executor's tree killed for memory, over all its starts
        self.root_user = os.geteuid() == 0
        self.uid = 10**6 + os.getpid() * 64 + next(_uid_counter) % 64 if self.root_user else None
        self.tree = Path(tempfile.mkdtemp(prefix="infralab-judge-"))
        self.lib, self.home = self.tree / "lib", self.tree / "home"
        self._build(code, package, config)
        self.proc: subprocess.Popen | None = None
        self.drain: Drain | None = None
        self.to_executor = self.from_executor = self.flags_from_executor = -1
        self.starts = 0
        self.overflowed = False  # some run printed more than the cap

    # -- the tree -----------------------------------------------------------------------------
    def _build(self, code: dict[str, Path], package: str, config: JudgeConfig) -> None:
        kit = self.lib / "kit"
        kit.mkdir(parents=True)
        here = Path(__file__).parent
        for name in KIT_FILES:
            shutil.copyfile(here / name, kit / name)
        (kit / "infralab").mkdir()  # the guards, the simulated group (multi-rank), and what they import
        (kit / "infralab" / "__init__.py").write_text("")
        for name in ("guards.py", "opclasses.py", "triton_watch.py", "errors.py"):
            shutil.copyfile(here.parent / name, kit / "infralab" / name)
        (kit / "infralab" / "perf").mkdir()
        for name in PERF_FILES:
            shutil.copyfile(here.parent / "perf" / name, kit / "infralab" / "perf" / name)
        shutil.copytree(here.parent / "distributed", kit / "infralab" / "distributed",
                        ignore=shutil.ignore_patterns("__pycache__"))  # the simulated group
        shutil.copytree(here.parent / "i18n", kit / "infralab" / "i18n",
                        ignore=shutil.ignore_patterns("__pycache__"))  # the guards' messages
        for rel, src in code.items():
            dest = self.lib / "code" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)  # plain bytes: sources were vetted by the caller (no links)
        for folder in (self.lib / "code").rglob("*"):
            if folder.is_dir() and not (folder / "__init__.py").exists():
                (folder / "__init__.py").write_text("")
        self.home.mkdir()
        executor_config = {"code": str(self.lib / "code"), "package": package, **config.for_executor(),
                           "threads": self.limits.threads, "gpu": self.limits.gpu}
        (self.lib / "executor.json").write_text(json.dumps(executor_config))
        (self.lib / "boot.json").write_text(json.dumps(self._boot_config()))
        for path in [self.tree, *self.lib.rglob("*"), self.lib]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(self.tree, 0o711)
        if self.uid is not None:
            os.chown(self.home, self.uid, self.uid)
        os.chmod(self.home, 0o700)

    def _env(self) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "TMPDIR": str(self.home), "LANG": "C.UTF-8",
               "OMP_NUM_THREADS": str(self.limits.threads), "MKL_NUM_THREADS": str(self.limits.threads),
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
               # the executor's uid has no passwd entry: getpass.getuser() (torch's and triton's
               # cache folders) would raise KeyError without these
               "USER": "student", "LOGNAME": "student"}
        if "INFRALAB_LANG" in os.environ:  # the guards' messages in the judge's language
            env["INFRALAB_LANG"] = os.environ["INFRALAB_LANG"]
        if "TRITON_INTERPRET" in os.environ:
            env["TRITON_INTERPRET"] = os.environ["TRITON_INTERPRET"]
        if self.limits.gpu and "CUDA_VISIBLE_DEVICES" in os.environ:  # the worker's one GPU (infralab grade --gpu)
            env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
        if self.limits.gpu:  # kernels compile there: an fp32 tl.dot in fp32, as under the interpreter
            env.update(fp32_dot_env())
        return env

    def _uses_cuda(self) -> bool:
        torch = sys.modules.get("torch")
        return bool(torch is not None and torch.cuda.is_available())

    def rlimits(self) -> dict[str, int]:
        limits = {"cpu": int(self.limits.budget_s) + 10, "nofile": self.limits.nofile,
                  "fsize": self.limits.fsize_bytes, "core": 0}
        if not self.limits.gpu and not self._uses_cuda():  # CUDA needs a large virtual address space
            limits["as"] = self.limits.memory_bytes
        if self.uid is not None:
            limits["nproc"] = self.limits.nproc
        return limits

    def _boot_config(self) -> dict:
        python = sys.executable
        hide = [str(self.course_root), *self.limits.hide]
        reveal = [os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), str(self.tree), str(self.home)]
        if sys.prefix != os.path.realpath(sys.prefix):
            reveal.insert(0, sys.prefix)
        return {
            "mounts": self.namespaces_problem is None, "system": list(SYSTEM_FOLDERS), "hide": hide, "reveal": reveal,
            "writable": [str(self.home)], "limits": self.rlimits(),
            "uid": self.uid, "gid": self.uid, "cwd": str(self.home), "python": python,
            "executor": str(self.lib / "kit" / "executor.py"), "executor_config": str(self.lib / "executor.json"),
            "env": self._env(),
            "devices": sorted(glob.glob("/dev/nvidia*")) if self.limits.gpu else [],  # grade --gpu: the GPU's nodes
        }

    # -- the process --------------------------------------------------------------------------
    def start(self) -> None:
        self.stop()
        judge_r, exec_w = os.pipe()  # answers: executor -> judge
        exec_r, judge_w = os.pipe()  # requests: judge -> executor
        flags_r, flags_w = os.pipe()  # flags, as they happen: executor -> judge (infralab.judge.flags)
        try:
            import fcntl
            fcntl.fcntl(flags_r, 1031, 1 << 20)  # F_SETPIPE_SZ: room for every capped flag of a call
        except OSError:
            pass
        boot = [sys.executable, "-I", "-B", str(self.lib / "kit" / "boot.py"), str(self.lib / "boot.json"),
                str(exec_r), str(exec_w), str(flags_w)]
        if self.namespaces_problem is None:
            boot = [*UNSHARE, "--kill-child", *boot]
        if self.cgroup_problem is None:
            self.group = MemoryGroup(self.tree_memory_bytes,
                                     f"infralab-{os.getpid()}-{self.tree.name}-{self.starts}")
        group = self.group

        def child_setup() -> None:  # runs in the child before exec: die with the judge, join the group
            import ctypes
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            if group is not None:
                group.join()

        self.proc = subprocess.Popen(boot, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, pass_fds=(exec_r, exec_w, flags_w),
                                     preexec_fn=child_setup,
                                     start_new_session=True, env={"PATH": "/usr/bin:/bin"})
        os.close(exec_r)
        os.close(exec_w)
        os.close(flags_w)
        self.to_executor, self.from_executor, self.flags_from_executor = judge_w, judge_r, flags_r
        self.drain = Drain(self.proc.stdout, self.limits.output_cap_bytes)
        self.drain.start()
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill the executor and everything it started (its PID namespace dies with it)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # our own child's session only
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            if self.drain is not None:
                self.drain.join(timeout=2)
                self.overflowed |= self.drain.total > self.limits.output_cap_bytes
        if self.group is not None:
            self.oom_kills += self.group.oom_kills()
            self.group.remove()
            self.group = None
        for fd in (self.to_executor, self.from_executor, self.flags_from_executor):
            if fd >= 0:
                os.close(fd)
        self.to_executor = self.from_executor = self.flags_from_executor = -1
        self.proc = None

    def output(self) -> tuple[str, int]:
        """What the executor printed (capped) and how many bytes it printed in all."""
        if self.drain is None:
            return "", 0
        return self.drain.kept.decode("utf-8", errors="replace"), self.drain.total

    @property
    def tree_memory_bytes(self) -> int:
        return self.limits.tree_memory_bytes or self.limits.memory_bytes

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tree, ignore_errors=True)

    def protections(self) -> dict:
        ns = self.namespaces_problem
        return {
            "mode": "isolated", "isolated": True,
            "network": "none (network namespace)" if ns is None else f"NOT isolated: {ns}",
            "filesystem": tr("cage.filesystem") if ns is None else f"NOT hidden: {ns}",
            "pid_namespace": ns is None,
            "ipc_namespace": tr("cage.ipc_namespace") if ns is None else tr("cage.missing", reason=ns),
            "memory_tree": tr("cage.memory_tree", limit=self.tree_memory_bytes) if self.cgroup_problem is None
            else tr("cage.memory_tree_missing", reason=self.cgroup_problem),
            "user": "unprivileged uid of its own, no_new_privs" if self.uid is not None
            else "same user as the judge (not root, so no switch)",
            "rlimits": {k: v for k, v in sorted(self.rlimits().items())},
            "call_timeout_s": self.limits.call_timeout_s, "budget_s": self.limits.budget_s,
            "output_cap_bytes": self.limits.output_cap_bytes,
            "environment": "scrubbed", "files": "allowlisted exercise modules copied into a fresh tree",
            "wire": "JSON + safetensors, no pickle",
            **({"gpu": tr("gpugrade.cage_gpu", devices=os.environ.get("CUDA_VISIBLE_DEVICES", "all"))}
               if self.limits.gpu else {}),
        }


def limits_as_json(limits: CageLimits) -> str:
    return json.dumps(asdict(limits))
