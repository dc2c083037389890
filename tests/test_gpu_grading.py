"""``infralab grade --gpu`` without a GPU: which devices, one per worker, the one-line refusal on a
machine without CUDA, the pytest node ids of the challenges, and tensors that lived on the GPU."""
from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from infralab.cli import main
from infralab.course import load_course
from infralab.errors import InfralabError
from infralab.gpu_workers import gpu_devices
from infralab.grade import named_after_student, run_local
from infralab.judge import wire
from infralab.perf.caged import perf_cases

ROOT = Path(__file__).resolve().parents[1]


class FakeCuda:
    def __init__(self, count: int):
        self.count = count

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count


def test_the_devices_are_the_visible_ones_or_every_gpu():
    assert gpu_devices(FakeCuda(3), {}) == ["0", "1", "2"]
    assert gpu_devices(FakeCuda(2), {"CUDA_VISIBLE_DEVICES": "5, 7"}) == ["5", "7"]
    with pytest.raises(InfralabError, match="CUDA_VISIBLE_DEVICES"):
        gpu_devices(FakeCuda(1), {"CUDA_VISIBLE_DEVICES": " , "})
    with pytest.raises(InfralabError, match="no CUDA GPU"):
        gpu_devices(FakeCuda(0), {})


def test_each_worker_holds_its_own_gpu_while_it_grades():
    held: set[str] = set()
    seen: list[str] = []
    lock = threading.Lock()
    most = [0]

    def grade(*task, device):
        with lock:
            assert device not in held, f"device {device} given to two workers at once"
            held.add(device)
            most[0] = max(most[0], len(held))
        time.sleep(0.02)
        with lock:
            held.discard(device)
            seen.append(device)
        return {"student": task[0]}

    records = run_local([(f"s{i}",) for i in range(8)], jobs=4, done=lambda r: None, devices=["3", "6"],
                        grade_fn=grade)
    assert len(records) == 8 and set(seen) == {"3", "6"} and most[0] == 2


def test_grade_gpu_without_cuda_is_one_line_and_writes_nothing(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    (tmp_path / "alice").mkdir()
    code = main(["grade", str(tmp_path / "alice"), "--out", str(tmp_path / "out"), "--gpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--gpu" in err and "no CUDA GPU" in err
    assert not (tmp_path / "out").exists()


def test_the_challenges_node_ids_are_the_ones_test_perf_parametrizes():
    """Every exercise with ``perf:`` challenges, in any part, is reachable by ``grade --gpu``: its part has a
    test_perf.py whose cases are exactly the node ids the grading selects."""
    course = load_course(ROOT)
    with_perf = [ex for ex in course.exercises if ex.perf]
    assert {ex.part for ex in with_perf} >= {"part03_kernels", "part04_serving", "part05_quantization"}
    ids = perf_cases(course, with_perf)
    assert len(ids) == sum(len(c["shapes"]) for ex in with_perf for c in ex.perf)
    params = set()
    for part in {ex.part for ex in with_perf}:
        file = ROOT / "graders" / part / "test_perf.py"
        spec = importlib.util.spec_from_file_location(f"_perf_cases_probe_{part}", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        params |= {f"{file}::{module.test_kernel_is_correct_and_reaches_the_pass_bar.__name__}[{p.id}]"
                   for p in module.CASES}
    assert set(ids) == params


def test_a_tensor_that_lived_on_the_gpu_says_so_on_the_wire():
    t = torch.arange(3.0)
    data = {"$tuple": [{"$t": "t0", "d": "cuda"}, {"$t": "t1"}]}
    seen = []
    wire.decode(data, {"t0": t, "t1": t}, lambda d: None, place=lambda x, was_cuda: seen.append(was_cuda) or x)
    assert seen == [True, False]
    enc = wire.Encoder(lambda o: None)
    assert enc.encode(t) == {"$t": "t0"}  # a CPU tensor carries no device


def test_perf_entries_of_a_grading_name_the_student_not_the_staging_folder():
    record = {"exercises": [{"tests": [{"target": "/tmp/stage/alice"}]}],
              "perf": [{"candidate": {"target": "/tmp/stage/alice", "exercise": "part03_kernels.softmax"}}]}
    named = named_after_student(record, "/tmp/stage/alice", "alice")
    assert named["perf"][0]["candidate"]["target"] == "alice" and named["exercises"][0]["tests"][0]["target"] == "alice"


def test_a_ray_cluster_without_gpus_is_one_line_not_tasks_waiting_for_ever(monkeypatch):
    import types

    from infralab.grade import run_ray
    fake = types.SimpleNamespace(is_initialized=lambda: True, cluster_resources=lambda: {"CPU": 2.0},
                                 remote=lambda **kw: pytest.fail("a task was submitted"))
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(InfralabError, match="Ray cluster offers no GPU"):
        run_ray([("alice",)], 1, None, lambda r: None, gpu=True)


def test_a_gpu_grading_runs_the_judge_on_the_workers_gpu_with_the_challenges(monkeypatch, tmp_path):
    import json

    import infralab.grade as grade
    seen = {}

    def fake_run_tests(course, run, env, wall_timeout_s):
        seen.update(run=run, env=env)
        return {"exercises": [], "flags": [], "protections": {}, "pytest_exit": 0}

    monkeypatch.setattr(grade, "run_tests", fake_run_tests)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    options = {"exercises": ("part03_kernels.softmax",), "gpu": True, "time_cap_s": 3.0}
    intake = {"ignored_files": [], "flags": [], "notes": []}
    grade.grade_one(str(ROOT), "alice", str(tmp_path), options, intake, device="6")
    env, run = seen["env"], seen["run"]
    assert env["CUDA_VISIBLE_DEVICES"] == "6" and "TRITON_INTERPRET" not in env
    assert json.loads(env["INFRALAB_JUDGE"])["gpu"] is True
    assert run.extra_args[0] == "--gpu" and any("softmax-" in a for a in run.extra_args[1:])
    assert run.extra_args[1:3] == ["--perf-time-cap", "3.0"]  # grade --time-cap reaches the judge's sampling
    assert "--perf-one-block-gate" not in run.extra_args  # the filling gate is the default
    grade.grade_one(str(ROOT), "alice", str(tmp_path), {**options, "one_block_gate": True}, intake, device="6")
    assert seen["run"].extra_args[3] == "--perf-one-block-gate"  # grade --one-block-gate reaches the judge's policy


def test_the_gate_option_reaches_the_caged_policy(monkeypatch):
    import types

    from infralab.perf import caged
    seen = []
    monkeypatch.setattr(caged, "submitted_kernels", lambda module: (frozenset(), None))
    monkeypatch.setattr(caged, "run_caged_challenge", lambda *a, policy, **k: seen.append(policy))
    for one_block in (False, True):
        module = types.SimpleNamespace(_target=None, _module_name="part03_kernels.vector_add")
        caged.measure_in_cage(module, {}, {}, None, exercise="e", target="t", triton=True, time_cap_s=2.0,
                              one_block_gate=one_block)
    assert [(p.gate_fills_device, p.time_cap_s) for p in seen] == [(True, 2.0), (False, 2.0)]



def test_compiled_kernels_multiply_fp32_dots_in_fp32_as_the_interpreter_does(monkeypatch, tmp_path):
    """TF32 (Triton's default for an fp32 tl.dot) failed every fp32 hidden test of the attention and
    matmul references on the H200: the executor that sees a GPU compiles with TRITON_F32_DEFAULT=ieee
    (a course team's own setting is kept); one that does not, runs the interpreter and needs none."""
    from infralab.judge.cage import Cage, CageLimits
    from infralab.triton_env import fp32_dot_env

    monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    assert fp32_dot_env() == {"TRITON_F32_DEFAULT": "ieee"}
    assert fp32_dot_env({"TRITON_F32_DEFAULT": "tf32x3"}) == {"TRITON_F32_DEFAULT": "tf32x3"}
    cage = Cage.__new__(Cage)
    cage.home = tmp_path
    cage.limits = CageLimits(gpu=True)
    assert cage._env()["TRITON_F32_DEFAULT"] == "ieee"
    cage.limits = CageLimits(gpu=False)
    assert "TRITON_F32_DEFAULT" not in cage._env()
