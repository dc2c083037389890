"""The isolated judge's cage, checked with harmless probe code before any hostile sample runs.

A probe module (written here, run only inside the cage) reports what it can see and do; the
tests assert each protection the record claims: its own unprivileged uid with RLIMIT_NPROC
enforced (forks fail past the limit), no network, hidden course folders and results folder,
its own PID namespace, a read-only code tree, a scrubbed environment. Then the call machinery:
built-in exceptions, missing names, handles, in-place writes, timeouts, fail-fast budget.
"""
from __future__ import annotations

import os
import socket
import textwrap

import pytest
import torch

from infralab.errors import TargetError
from infralab.judge.cage import CageLimits, namespaces_unavailable
from infralab.judge.config import JudgeConfig
from infralab.judge.isolated import IsolatedTarget, protections_report
from infralab.targets import TargetSpec

pytestmark = pytest.mark.skipif(namespaces_unavailable() is not None,
                                reason=f"the cage needs root and namespaces: {namespaces_unavailable()}")

PROBE = '''
import getpass, os, resource, socket, time

import torch


def facts(port, course_root, out_dir):
    f = {"uid": os.getuid(), "ppid": os.getppid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
    f["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        f["net"] = "connected"
    except OSError as e:
        f["net"] = type(e).__name__
    for name in ("graders", "solutions", "fixtures"):
        try:
            f[name] = os.listdir(os.path.join(course_root, name))
        except OSError as e:
            f[name] = type(e).__name__
    try:
        f["out"] = os.listdir(out_dir)
    except OSError as e:
        f["out"] = type(e).__name__
    try:
        open(__file__, "a").close()
        f["write_code"] = "yes"
    except OSError as e:
        f["write_code"] = type(e).__name__
    with open(os.path.join(os.environ["HOME"], "scratch"), "w") as fh:
        fh.write("x")
    f["env"] = sorted(os.environ)
    f["user"] = getpass.getuser()  # torch and triton name their cache folders by it
    return f


def fork_until_refused(limit):
    """Harmless: children that sleep, until fork fails or `limit` is reached; then all are killed."""
    kids = []
    try:
        for _ in range(limit):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            kids.append(pid)
        result = -1
    except OSError:
        result = len(kids)
    for pid in kids:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return result


def add_into(x, out):
    out.copy_(x + 1)


def fails(kind):
    raise {"value": ValueError, "key": KeyError, "custom": type("Custom", (Exception,), {})}[kind]("bad input")


def sleep(seconds):
    time.sleep(seconds)
    return seconds


class Counter:
    def __init__(self, start):
        self.n = start

    def add(self, k):
        self.n += k
        return self.n


def make_counter(start):
    return Counter(start)
'''


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe")
    (root / "exercises/part09_probe").mkdir(parents=True)
    (root / "exercises/part09_probe/probe.py").write_text(textwrap.dedent(PROBE))
    (root / "graders").mkdir()
    (root / "graders/secret.py").write_text("EXPECTED = 42\n")
    (root / "out").mkdir()
    spec = TargetSpec(name="probe", base=root / "exercises", kind="exercises")
    limits = CageLimits(call_timeout_s=4.0, budget_s=60.0, nproc=32, hide=[str(root / "out")])
    target = IsolatedTarget(spec, JudgeConfig(course_root=root, mutates={"part09_probe.probe": {"add_into": {"out": 1}}}),
                            limits)
    yield target, root
    target.close()


def test_limits_hold_for_harmless_code(probe):
    target, root = probe
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        f = target.load("part09_probe.probe").facts(server.getsockname()[1], str(root), str(root / "out"))
    finally:
        server.close()
    assert f["uid"] >= 10**6 and f["uid"] != os.getuid(), "the executor must run as its own unprivileged uid"
    assert f["nproc"] == 32
    assert f["net"] != "connected", "the executor reached the judge's loopback"
    assert f["graders"] in ([], "FileNotFoundError") and f["solutions"] in ([], "FileNotFoundError")
    assert f["out"] in ([], "FileNotFoundError"), "the results folder must be hidden"
    assert f["ppid"] == 0 and f["pids"] == [1], "the executor must have a PID namespace of its own"
    assert f["write_code"] == "PermissionError", "the copied code tree must be read-only"
    assert "INFRALAB_JUDGE" not in f["env"] and "PYTHONPATH" not in f["env"]
    assert f["user"] == "student", "the uid has no passwd entry: getpass.getuser() must not reach getpwuid"
    assert not list((root / "out").iterdir())


def test_process_limit_holds_before_any_fork_bomb(probe):
    """RLIMIT_NPROC (root ignores it; the cage drops root first) stops forking at the limit."""
    target, _ = probe
    made = target.load("part09_probe.probe").fork_until_refused(200)
    assert 0 < made < 32, f"fork was not refused under RLIMIT_NPROC=32 (made {made})"


def test_exceptions_come_back_as_builtin_types(probe):
    mod = probe[0].load("part09_probe.probe")
    with pytest.raises(ValueError, match="bad input"):
        mod.fails("value")
    with pytest.raises(KeyError):
        mod.fails("key")
    with pytest.raises(RuntimeError, match="Custom: bad input"):
        mod.fails("custom")


def test_missing_names_raise_target_error(probe):
    with pytest.raises(TargetError, match="has no `nope`"):
        probe[0].load("part09_probe.probe").nope
    with pytest.raises(TargetError, match="module file is missing"):
        probe[0].load("part09_probe.absent")


def test_returned_objects_are_handles_with_remote_methods(probe):
    counter = probe[0].load("part09_probe.probe").make_counter(3)
    assert counter.add(2) == 5 and counter.add(1) == 6
    assert counter != 6 and not (counter == counter.add(0)), "a handle never equals data"
    with pytest.raises(TypeError, match="cannot pass"):
        probe[0].load("part09_probe.probe").sleep(lambda: 0)


def test_in_place_writes_reach_the_judges_buffer(probe):
    out = torch.full((4,), float("nan"))
    probe[0].load("part09_probe.probe").add_into(torch.arange(4.0), out)
    assert torch.equal(out, torch.arange(4.0) + 1)


def test_a_hung_call_is_killed_and_the_next_call_works(probe):
    target = probe[0]
    mod = target.load("part09_probe.probe")
    with pytest.raises(TimeoutError, match="did not return within"):
        mod.sleep(60)
    assert mod.sleep(0) == 0, "after a timeout the executor restarts for the next call"
    assert {"kind": "timeout", "detail": "part09_probe.probe.sleep ran out of time", "source": "executor"} in target.flags
    report = protections_report([target])
    assert report["network"].startswith("none") and report["pid_namespace"] and report["rlimits"]["nproc"] == 32


def test_spent_budget_fails_calls_fast(tmp_path):
    (tmp_path / "exercises/part09_probe").mkdir(parents=True)
    (tmp_path / "exercises/part09_probe/probe.py").write_text(textwrap.dedent(PROBE))
    spec = TargetSpec(name="probe", base=tmp_path / "exercises", kind="exercises")
    target = IsolatedTarget(spec, JudgeConfig(course_root=tmp_path), CageLimits(call_timeout_s=30.0, budget_s=8.0))
    try:
        mod = target.load("part09_probe.probe")
        with pytest.raises(TimeoutError):
            mod.sleep(60)
        with pytest.raises((TimeoutError, TargetError), match="budget"):  # not even re-imported
            mod.sleep(0)
    finally:
        target.close()


BANNED = '''
import torch


def product(a, b):
    return a @ b


def hidden_product(a, b):
    try:
        return a.matmul(b)
    except RuntimeError:
        return torch.zeros(a.shape[0], b.shape[1])
'''


def test_banned_routines_raise_and_are_flagged_in_the_cage(tmp_path):
    (tmp_path / "exercises/part09_probe").mkdir(parents=True)
    (tmp_path / "exercises/part09_probe/banned.py").write_text(textwrap.dedent(BANNED))
    spec = TargetSpec(name="probe", base=tmp_path / "exercises", kind="exercises")
    target = IsolatedTarget(spec, JudgeConfig(course_root=tmp_path, banned={"part09_probe.banned": ("matmul",)}),
                            CageLimits(call_timeout_s=30.0, budget_s=60.0))
    try:
        mod = target.load("part09_probe.banned")
        a, b = torch.ones(2, 3), torch.ones(3, 4)
        with pytest.raises(RuntimeError, match=r"^BannedCall: part09_probe.banned: product called "
                                               r"aten.mm \(matmul routine\), .*\(banned here: matmul\)") as caught:
            mod.product(a, b)
        assert caught.value.remote_where == "exercises/part09_probe/banned.py:6", "the student's line, not the guard's"
        assert torch.equal(mod.hidden_product(a, b), torch.zeros(2, 4))  # caught by the code: still flagged
        details = [f["detail"] for f in target.flags if f["kind"] == "banned-call"]
        assert details == ["part09_probe.banned: product called aten.mm (matmul)",
                           "part09_probe.banned: hidden_product called aten.mm (matmul)"]
    finally:
        target.close()
