"""The judge's flag record (known kinds only, judge-only kinds refused from the executor, a cap per
kind) and the static scan of submitted source (AST, file:line, names hidden in strings)."""
import os

import pytest

from infralab.judge.flags import CAP_PER_KIND, FlagLog, describe, known_kinds
from infralab.judge.scan import findings, scan_files


def test_every_flag_kind_has_a_description_in_both_languages():
    assert {"tampering", "banned-call", "input-modified", "guard-disabled", "suspicious-source"} <= known_kinds()
    assert describe("guard-disabled", "en") != describe("guard-disabled", "zh")


def test_a_flood_of_one_kind_cannot_crowd_out_another():
    log = FlagLog()
    for i in range(200):
        log.add("read-hidden", f"open /graders/{i}", "executor", from_executor=True)
    log.add("tampering", "torch.allclose was replaced", "executor", from_executor=True)
    kinds = [f["kind"] for f in log.finished()]
    assert kinds.count("read-hidden") == CAP_PER_KIND and "tampering" in kinds
    assert {"kind": "flags-capped", "detail": f"read-hidden: {200 - CAP_PER_KIND} more not kept",
            "source": "judge"} in log.finished()


def test_unknown_and_judge_only_kinds_from_the_executor_are_forgeries():
    log = FlagLog()
    log.add('=HYPERLINK("http://x","ok")', "x", "executor", from_executor=True)
    log.add("grading-error", "fake", "executor", from_executor=True)
    log.add("timeout", "the judge's own", "executor")
    kinds = [f["kind"] for f in log.finished()]
    assert kinds == ["flag-forged", "flag-forged", "timeout"]
    assert not any(f["detail"].startswith("=") for f in log.finished())


HOSTILE = '''
import ctypes, gc, sys
import torch
from torch.utils._python_dispatch import _disable_current_modes

def f(x):
    with torch._C.DisableTorchFunction():
        frame = sys._getframe(1)
    getattr(sys.modules["__main__"], "guarded_call")
    return gc.get_objects()

g = torch.compile(f)
import numpy as np
h = lambda x: np.exp(x.numpy())
'''
CLEAN = '''
import math
import torch
import triton
import triton.language as tl

def softmax(x):
    return torch.empty_like(x)
'''


def test_the_scan_flags_what_has_no_place_in_an_answer_with_its_line():
    found = sorted(findings(HOSTILE, "m.py", triton=True))
    text = "\n".join(f"{line}: {what}" for line, what in found)
    for line, words in ((2, "import ctypes"), (2, "import gc"), (4, "_disable_current_modes"),
                        (7, "torch._C"), (7, "DisableTorchFunction"), (8, "sys._getframe"), (9, "'__main__'"),
                        (9, "'guarded_call'"), (10, "gc.get_objects"), (12, "torch.compile"), (13, "import numpy"),
                        (14, ".numpy()")):
        assert any(n == line and words in what for n, what in found), f"line {line} {words!r} not in:\n{text}"
    assert not list(findings(CLEAN, "m.py", triton=True))
    assert not any("torch.compile" in w for _, w in findings(HOSTILE, "m.py", triton=False))


def test_scan_files_names_the_file_and_line(tmp_path):
    (tmp_path / "m.py").write_text("import ctypes\n")
    assert scan_files({"part01_x/m.py": tmp_path / "m.py"}) == \
        [("suspicious-source", "part01_x/m.py:1: import ctypes (ctypes)")]


CHANNEL = '''
import os, sys


def garbage():
    os.write(int(sys.argv[4]), (5).to_bytes(8, "little") + (0).to_bytes(8, "little") + b"nojson")
    return 1


def close_channel():
    os.close(int(sys.argv[4]))
    return 2
'''


def test_garbage_or_a_closed_flag_channel_is_itself_a_flag(tmp_path):
    import pytest

    from infralab.judge.cage import CageLimits, namespaces_unavailable
    from infralab.judge.config import JudgeConfig
    from infralab.judge.isolated import IsolatedTarget
    from infralab.targets import TargetSpec

    if namespaces_unavailable() is not None:
        pytest.skip(f"the cage needs root and namespaces: {namespaces_unavailable()}")
    (tmp_path / "exercises/part09_probe").mkdir(parents=True)
    (tmp_path / "exercises/part09_probe/channel.py").write_text(CHANNEL)
    spec = TargetSpec(name="probe", base=tmp_path / "exercises", kind="exercises")
    for call, words in (("garbage", "unreadable"), ("close_channel", "closed or silenced")):
        target = IsolatedTarget(spec, JudgeConfig(course_root=tmp_path), CageLimits(call_timeout_s=30.0))
        try:
            getattr(target.load("part09_probe.channel"), call)()
            assert any(f["kind"] == "flag-channel" and words in f["detail"] for f in target.flags), target.flags
        finally:
            target.close()


def test_every_kind_intake_records_is_a_known_kind_and_judge_only():
    import re
    from pathlib import Path

    from infralab.judge.flags import JUDGE_ONLY
    source = (Path(__file__).resolve().parents[1] / "infralab/judge/intake.py").read_text(encoding="utf-8")
    kinds = set(re.findall(r'\.flag\("([a-z-]+)"', source))
    assert kinds, "intake records no flag: the pattern of this test is out of date"
    assert kinds <= known_kinds() and kinds <= JUDGE_ONLY, kinds - (known_kinds() & JUDGE_ONLY)


def test_tritons_own_compile_is_not_flagged_but_a_process_or_a_write_of_the_students_is(monkeypatch, tmp_path):
    """Triton compiling a kernel in the cage (grade --gpu) runs its bundled ptxas and writes its cache
    under HOME: not the student's doing. Any other program, or a write outside HOME, still flags."""
    from infralab.judge import executor
    if not executor._TOOLS:
        pytest.skip("Triton is not installed here")
    got = []
    flag = lambda kind, detail: got.append(kind)  # noqa: E731
    ptxas = executor._TOOLS[0] + "nvidia/bin/ptxas"
    monkeypatch.setenv("HOME", str(tmp_path))
    executor._audit(flag, "subprocess.Popen", (None, [ptxas, "-arch=sm_90"], None, None))
    executor._audit(flag, "os.posix_spawn", (ptxas, [ptxas], {}))
    executor._audit(flag, "open", (str(tmp_path), None, os.O_RDONLY | os.O_CREAT))
    executor._audit(flag, "open", ("/dev/null", "w", 0))
    assert got == []
    executor._audit(flag, "subprocess.Popen", (None, ["/bin/sh", "-c", "true"], None, None))
    executor._audit(flag, "os.posix_spawn", ("/bin/sh", ["sh"], {}))
    executor._audit(flag, "open", (str(tmp_path.parent / "elsewhere"), "w", 0))
    assert got == ["process", "process", "write-outside"]
