"""A memory cgroup for one executor's whole process tree, where the machine offers one.

RLIMIT_AS caps each process; a submission that forks holds that much in every child. A memory
cgroup caps the tree: the executor, everything it forks, all their threads, together. The
executor is moved into the group by its own first process before ``exec`` (so no child escapes
it), and the judge reads afterwards whether the kernel killed something for memory.

Both layouts are handled: cgroup v1 (a ``memory`` hierarchy, ``memory.limit_in_bytes``) and v2
(the unified hierarchy, ``memory.max``, when the judge's own group may delegate the memory
controller). Where neither works (no cgroupfs, not root, a v2 group that cannot delegate),
:func:`memory_cgroup_unavailable` says why, and the record lists the protection as missing.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from infralab.i18n import tr

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_groups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    groups = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            groups[name] = path
    return groups


def _parent() -> tuple[Path, str]:
    """The folder under which executor groups are made, and the layout ("v1" or "v2")."""
    groups = _own_groups()
    if "memory" in groups and (CGROUP_ROOT / "memory").is_dir():  # v1 (or hybrid with a v1 memory hierarchy)
        return CGROUP_ROOT / "memory" / groups["memory"].lstrip("/"), "v1"
    if "" in groups and (CGROUP_ROOT / "cgroup.controllers").is_file():  # pure v2
        parent = CGROUP_ROOT / groups[""].lstrip("/")
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+memory")  # refused when the group holds processes
        return parent, "v2"
    raise OSError(tr("cage.no_cgroup_hierarchy"))


class MemoryGroup:
    """One cgroup, made for one start of an executor and removed when it has stopped."""

    def __init__(self, limit_bytes: int, name: str):
        parent, self.layout = _parent()
        self.path = parent / name
        self.path.mkdir()
        limit_file = "memory.limit_in_bytes" if self.layout == "v1" else "memory.max"
        (self.path / limit_file).write_text(str(int(limit_bytes)))
        swap = self.path / ("memory.memsw.limit_in_bytes" if self.layout == "v1" else "memory.swap.max")
        try:  # no swapping around the limit where the kernel accounts swap
            swap.write_text(str(int(limit_bytes)) if self.layout == "v1" else "0")
        except OSError:
            pass
        self.procs = str(self.path / "cgroup.procs")

    def join(self) -> None:
        """Move the calling process into the group (the executor's first process, before exec)."""
        with open(self.procs, "w") as f:
            f.write(str(os.getpid()))

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed for memory."""
        try:
            text = (self.path / ("memory.oom_control" if self.layout == "v1" else "memory.events")).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        for _ in range(50):  # the killed processes leave the group within moments
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


_PROBE: list[str | None] = []


def memory_cgroup_unavailable() -> str | None:
    """None if executor memory groups can be made here (checked once), else the reason."""
    if not _PROBE:
        try:
            group = MemoryGroup(1 << 30, f"infralab-probe-{os.getpid()}")
            group.remove()
            _PROBE.append(None)
        except (OSError, ValueError) as e:
            _PROBE.append(tr("cage.no_cgroup", error=f"{type(e).__name__}: {e}"))
    return _PROBE[0]
