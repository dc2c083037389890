"""The executor's first seconds: lock the cage, drop privileges, then exec the executor.

Runs as ``python -I -B boot.py BOOT.json REQUESTS_FD ANSWERS_FD FLAGS_FD``, already inside fresh network, mount, PID
and IPC namespaces (``unshare --net --mount --pid --ipc --fork``), and still as root. It:

1. builds a fresh root file system holding only the system's folders (``/usr``, ``/etc``, ``/opt``),
   Python, the virtual environment and its own tree (all read-only; ``HOME`` writable), a fresh
   ``/proc`` of its PID namespace, ``/dev`` without ``/dev/shm``'s contents, ``/sys`` without the
   cgroup hierarchies, and ``pivot_root``s into it: the course root with ``graders/``,
   ``solutions/`` and ``fixtures/``, ``/root``, ``/tmp``, the results folder are not there at all,
   and ``/proc/self/mountinfo`` names none of them;
2. sets resource limits (CPU time, address space, processes, open files, file size, no core);
3. sets ``no_new_privs``, drops to the executor's own unprivileged uid/gid;
4. execs ``python -I -B executor.py`` with a scrubbed environment.

Standard library only; it is copied into the executor's tree (root-owned, read-only). So its
errors stay English (marked as kit bugs): a cage that cannot boot is the kit's or the machine's
failure, reported by the judge as ``cage.not_started`` with this output.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC = 1, 2, 4, 8, 32, 4096, 8192, 16384
MNT_DETACH = 2
NEW_ROOT = "/media"  # an empty folder on the host; only this namespace mounts anything on it

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    rc = _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                     data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")  # kit bug, not a user message


def _tmpfs(target: str, mode: str = "0755", size: str = "1m", flags: int = MS_NOSUID | MS_NODEV) -> None:
    _mount("tmpfs", target, "tmpfs", flags, f"mode={mode},size={size}")


def _read_only(target: str, flags: int = MS_NOSUID | MS_NODEV) -> None:
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _bind(path: str, root: str, recursive: bool = True) -> str:
    """``path`` of the host, at the same path under ``root``; returns where it went."""
    inside = root + path
    if os.path.isdir(path):
        os.makedirs(inside, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(inside), exist_ok=True)
        open(inside, "a").close()
    _mount(path, inside, None, MS_BIND | (MS_REC if recursive else 0))
    return inside


def _syscall_pivot_root(new: str, old: str) -> None:
    if _libc.syscall(155, new.encode(), old.encode()) != 0:  # SYS_pivot_root on x86_64
        err = ctypes.get_errno()
        raise OSError(err, f"pivot_root {new}: {os.strerror(err)}")  # kit bug, not a user message


def bind_devices(devices: list[str], root: str) -> None:
    """The GPU's device nodes (``grade --gpu``), each bound where it is: a container's ``/dev`` may hold
    them as bind mounts of their own, which the non-recursive bind of ``/dev`` leaves out. Nothing is
    created on the host: a node whose mount point is not there, or that fails to bind, is skipped."""
    for path in devices:
        inside = root + path
        if not os.path.lexists(inside):
            continue
        try:
            _mount(path, inside, None, MS_BIND | MS_REC)
        except OSError:
            continue


def build_root(system: list[str], reveal: list[str], writable: list[str], hide: list[str],
               devices: list[str] = ()) -> None:
    """A fresh root file system holding only ``system`` (``/usr``, ``/etc``, ...), ``reveal``
    (Python, the executor's tree) and a fresh ``/dev``, ``/proc`` and ``/sys``; then ``pivot_root``
    into it and drop the host's tree. Nothing else of the host is mounted, so nothing else is
    listed in ``/proc/self/mountinfo`` either. ``hide``: host folders that fall inside a revealed
    one get an empty read-only folder over them."""
    root = NEW_ROOT
    _tmpfs(root, size="1m")
    for name in os.listdir("/"):  # the top-level links (/bin -> usr/bin, /lib64 -> usr/lib64)
        if os.path.islink(f"/{name}") and os.readlink(f"/{name}").lstrip("/").split("/")[0] in \
                {p.strip("/").split("/")[0] for p in system}:
            os.symlink(os.readlink(f"/{name}"), f"{root}/{name}")
    mounted = [_bind(p, root) for p in system if os.path.exists(p)]
    mounted += [_bind(p, root) for p in reveal if os.path.exists(p) and p not in writable]
    for path in hide:
        inside = root + path
        if os.path.isdir(inside) and any(path.startswith(r.rstrip("/") + "/") for r in reveal + system):
            _tmpfs(inside, flags=MS_NOSUID | MS_NODEV | MS_RDONLY)
    for inside in mounted:
        _read_only(inside)
    for path in writable:  # after the read-only ones: a writable folder inside a read-only tree
        _bind(path, root)
    os.makedirs(root + "/dev", exist_ok=True)
    _mount("/dev", root + "/dev", None, MS_BIND)  # devtmpfs alone: not /dev/shm, /dev/pts, /dev/mqueue
    bind_devices(list(devices), root)
    _tmpfs(root + "/dev/shm", flags=MS_NOSUID | MS_NODEV | MS_RDONLY)
    os.makedirs(root + "/sys", exist_ok=True)
    _mount("/sys", root + "/sys", None, MS_BIND)  # sysfs alone: no cgroup hierarchies under it
    _read_only(root + "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this PID namespace's
    os.makedirs(root + "/.old", exist_ok=True)
    _syscall_pivot_root(root, root + "/.old")
    os.chdir("/")
    if _libc.umount2(b"/.old", MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount the host's tree: {os.strerror(err)}")  # kit bug, not a user message
    os.rmdir("/.old")
    _read_only("/")


def set_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        which = getattr(resource, f"RLIMIT_{name.upper()}")
        hard = value + 5 if name == "cpu" else value
        resource.setrlimit(which, (value, hard))


def drop_privileges(uid: int, gid: int) -> None:
    _libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: no setuid binary can give root back
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit("boot: could not drop privileges")  # kit bug, not a user message


def main() -> int:
    config = json.loads(open(sys.argv[1], encoding="utf-8").read())
    if config.get("mounts"):
        build_root(config["system"], config["reveal"], config.get("writable", []), config["hide"],
                   config.get("devices", []))
    set_limits(config["limits"])
    if config.get("uid") is not None:
        drop_privileges(config["uid"], config["gid"])
    os.chdir(config["cwd"])
    os.execve(config["python"], [config["python"], "-I", "-B", config["executor"], config["executor_config"],
                                  *sys.argv[2:5]],
              config["env"])
    return 1


if __name__ == "__main__":
    sys.exit(main())
