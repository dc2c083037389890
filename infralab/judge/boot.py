"""The executor's first seconds: lock the cage, drop privileges, then exec the executor.

Runs as ``python -I -B boot.py BOOT.json REQUESTS_FD ANSWERS_FD FLAGS_FD``, already inside fresh network, mount and PID
namespaces (``unshare --net --mount --pid --fork --mount-proc``), and still as root. It:

1. hides folders behind empty read-only tmpfs mounts (the course root with ``graders/``,
   ``solutions/`` and ``fixtures/``, ``/root``, ``/tmp``, the results folder, ...), then puts back
   only what the executor needs (Python, the virtual environment, its own tree), read-only;
2. sets resource limits (CPU time, address space, processes, open files, file size, no core);
3. sets ``no_new_privs``, drops to the executor's own unprivileged uid/gid;
4. execs ``python -I -B executor.py`` with a scrubbed environment.

Standard library only; it is copied into the executor's tree (root-owned, read-only).
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC = 1, 2, 4, 32, 4096, 8192, 16384
STAGE = "/media"  # an empty folder outside every hidden one, used only inside this namespace

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    rc = _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                     data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _tmpfs(target: str, mode: str = "0755", size: str = "1m", flags: int = MS_NOSUID | MS_NODEV) -> None:
    _mount("tmpfs", target, "tmpfs", flags, f"mode={mode},size={size}")


def _read_only(target: str) -> None:
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def lock_filesystem(hide: list[str], reveal: list[str], writable: list[str]) -> None:
    hide = [h for h in hide if os.path.isdir(h)]
    reveal = [r for r in reveal if os.path.exists(r)]
    _tmpfs(STAGE, size="64k")
    for i, path in enumerate(reveal):  # park what must stay visible
        os.mkdir(f"{STAGE}/{i}")
        _mount(path, f"{STAGE}/{i}", None, MS_BIND | MS_REC)
    covered = []
    for path in sorted(set(hide), key=len):
        if any(path == c or path.startswith(c.rstrip("/") + "/") for c in covered):
            continue  # already inside a hidden folder
        _tmpfs(path)
        covered.append(path)
    for i, path in enumerate(reveal):  # put it back at the same path, inside the empty folders
        os.makedirs(path, exist_ok=True)
        _mount(f"{STAGE}/{i}", path, None, MS_MOVE)
        if path not in writable:
            _read_only(path)
    for path in covered:
        _read_only(path)


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
        raise SystemExit("boot: could not drop privileges")


def main() -> int:
    config = json.loads(open(sys.argv[1], encoding="utf-8").read())
    if config.get("mounts"):
        lock_filesystem(config["hide"], config["reveal"], config.get("writable", []))
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
