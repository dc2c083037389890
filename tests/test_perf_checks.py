"""The checks of the timed calls (issue #12), on a CPU: the kernel audit over recorded profiler
kernel lists, the source checks, the timer snapshot, and run_challenge with a fake profiler."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from infralab.perf.checked import CheckedCandidate, own_kernel_names, submission_threads, tampered, torch_compile_use
from infralab.perf.harness import SamplingPolicy, sample_interleaved
from infralab.perf.kernel_audit import Kernel, audit, audit_baseline, family, kernels_from_trace
from infralab.perf.run import run_challenge
from tests.test_perf_harness import H200, SMALL, Fake, SoftmaxModule, spec

# names as the H200's profiler (torch 2.11, CUDA 13) reports them (benchmarks/results/h200-kernel-names.json);
# marker first, on the timed stream 7
MARKER = Kernel("at::cuda::(anonymous namespace)::spin_kernel(long)", 7)
ADD = Kernel("add_kernel", 7)
COPY = Kernel("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
              "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>>(int, T1)", 7)
FILL = Kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
              "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", 7)
NVJET = Kernel("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 7)
CUDNN = Kernel("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32", 7)
INDUCTOR = Kernel("triton_poi_fused_add_0", 7)
ATEN_ADD = Kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                  "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", 7)
REDUCE = Kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<"
                "float, at::native::MaxNanFunctor<float>>, unsigned int, float, 4> >(at::native::ReduceOp<...>)", 7)
OWN = frozenset({"add_kernel"})


def test_own_triton_kernels_with_copies_and_fills_pass_the_audit():
    assert audit([MARKER, COPY, ADD, FILL, ADD], OWN, ["add_kernel", "add_kernel"]) is None


@pytest.mark.parametrize("kernel, words", [
    (NVJET, "cuBLAS"), (CUDNN, "cuDNN"), (INDUCTOR, "Inductor"), (ATEN_ADD, "aten"), (REDUCE, "aten"),
    (Kernel("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>", 7), "attention"),
])
def test_a_library_or_compiler_kernel_in_the_batch_rejects_with_its_name(kernel, words):
    reason = audit([MARKER, ADD, kernel], OWN, ["add_kernel"])
    assert reason and kernel.name[:40] in reason and words in reason


def test_a_batch_without_any_own_kernel_rejects_and_lists_what_ran():
    reason = audit([MARKER, NVJET], OWN, [])
    assert reason and "none of the submission's own" in reason and "nvjet" in reason


def test_a_kernel_on_another_stream_than_the_marker_rejects_as_a_side_stream():
    reason = audit([MARKER, Kernel("add_kernel", 13)], OWN, ["add_kernel"])
    assert reason and "side stream" in reason and "13" in reason


def test_a_baseline_batch_with_work_on_another_stream_names_it():
    copy = Kernel("Memcpy DtoD (Device -> Device)", 13, "gpu_memcpy")
    reason = audit_baseline([MARKER, NVJET, copy])
    assert reason and "baseline" in reason and "Memcpy DtoD" in reason and "stream 13" in reason
    assert audit_baseline([MARKER, NVJET, Kernel("Memcpy DtoD (Device -> Device)", 7, "gpu_memcpy")]) is None
    assert audit_baseline([NVJET, copy]) is None  # no marker: no timed stream to compare with


def test_a_library_kernel_named_like_an_own_kernel_is_caught_by_the_launch_count():
    # a @triton.jit function named like cuBLAS's kernel: the name matches, Triton never launched it
    own = frozenset({"add_kernel", NVJET.name})
    reason = audit([MARKER, ADD, NVJET], own, ["add_kernel"])
    assert reason and "Triton launched it 0 times" in reason


def test_the_families_keep_copies_and_fills_allowed_and_name_the_rest():
    assert {family(k.name) for k in (COPY, FILL)} == {"allowed"}
    assert [family(k.name) for k in (NVJET, CUDNN, INDUCTOR, ATEN_ADD)] == ["cublas", "cudnn", "inductor",
                                                                            "aten-compute"]
    assert family("Memcpy DtoD (Device -> Device)") == "allowed"


def test_kernels_are_read_from_a_kineto_chrome_trace_in_start_order():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "add_kernel", "ts": 20, "args": {"stream": 7}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 5},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 30, "args": {"stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "spin_kernel(long)", "ts": 10, "args": {"stream": 7}},
        {"ph": "i", "cat": "kernel", "name": "ignored instant"}]}
    got = kernels_from_trace(trace)
    assert [k.name for k in got] == ["spin_kernel(long)", "add_kernel", "Memset (Device)"]
    assert all(k.stream == 7 for k in got) and got[2].kind == "gpu_memset"


def test_own_kernels_are_the_jit_functions_of_the_files():
    src = ("import triton\nfrom triton import jit\n@triton.autotune(configs=[], key=[])\n@triton.jit\n"
           "def matmul_kernel(a): pass\n@jit\ndef helper(x): pass\n@triton.jit(do_not_specialize=[0])\n"
           "def k2(x): pass\ndef matmul(a, b): pass\n")
    assert own_kernel_names([src, "this is not python ("]) == {"matmul_kernel", "helper", "k2"}


@pytest.mark.parametrize("src, found", [
    ("import torch\nf = torch.compile(g)\n", "torch.compile"),
    ("import torch as t\n@t.compile\ndef f(x): pass\n", "t.compile"),
    ("from torch import compile as c\n", "from torch import compile"),
    ("import torch._dynamo\n", "import torch._dynamo"),
    ("from torch._inductor import config\n", "from torch._inductor"),
    ("import torch\nre.compile('x')\ntorch.empty(3)\n", None),
])
def test_torch_compile_in_the_source_is_found_by_any_spelling(src, found):
    use = torch_compile_use(src)
    assert (use is None) if found is None else (found in use)


def test_a_patched_event_timer_is_reported_by_name(monkeypatch):
    assert tampered() == []
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    assert tampered() == ["torch.cuda.Event.elapsed_time"]


# --- the profiled batch in the sampling loop and in run_challenge --------------------------------

def test_the_profiled_batch_is_left_out_of_the_statistics_and_runs_even_if_sampling_stops_first():
    seen = []
    calls = {"candidate": 1, "baseline": 1}
    runners = {"candidate": lambda i: None, "baseline": lambda i: None}
    res = sample_interleaved(runners, Fake([1e-3]), SamplingPolicy(min_samples=4, max_samples=4), calls,
                             asides=[("candidate", 2, lambda r, n, start: seen.append(start))])
    assert seen == [2] and len(res.timings["candidate"].samples) == 3 and len(res.timings["baseline"].samples) == 4
    seen.clear()
    sample_interleaved(runners, Fake([1e-3]), SamplingPolicy(min_samples=4, max_samples=4), calls,
                       asides=[("candidate", 50, lambda r, n, start: seen.append(start))])
    assert seen == [4]  # after the last round


def _candidate(module, triton=True, problem=None):
    return CheckedCandidate(gate=module, timed=module, triton=triton, own_kernels=frozenset({"softmax_kernel"}),
                            problem=problem)


def _run(candidate, profiler):
    c = spec(dtype="float32", shapes=[{"M": 8, "N": 300}])
    return run_challenge(candidate, c, c["shapes"][0], H200, timer=Fake([1e-3]), target="test",
                         exercise="part03_kernels.softmax", device="cpu", policy=SMALL, profiler=profiler)


def test_each_round_profiles_one_batch_and_an_own_kernel_batch_is_accepted():
    batches = []

    def profiler(run):
        run()
        batches.append(1)
        return [MARKER, Kernel("softmax_kernel", 7)], ["softmax_kernel"]

    e = _run(_candidate(SoftmaxModule), profiler)
    assert e["correct"] and len(batches) == 4  # one candidate and one baseline batch per round
    profiled = e["evidence"]["profiled_batches"]
    assert [b["problem"] for b in profiled] == [None] * 4
    assert sorted(b["runner"] for b in profiled) == ["baseline", "baseline", "candidate", "candidate"]
    assert any("CUDA profiler" in p for p in e["protections"])


def test_work_left_running_during_the_baseline_batch_rejects_the_candidate():
    """busy_thread's trick in-process: while the candidate is idle, its thread copies on a stream of its
    own, slowing the judge's baseline. The profiled baseline batch sees the copy on another stream."""
    class Counted:
        calls = 0

        @classmethod
        def softmax(cls, x):
            cls.calls += 1
            return SoftmaxModule.softmax(x)

    def profiler(run):
        before = Counted.calls
        run()
        if Counted.calls > before:  # the candidate's batch
            return [MARKER, Kernel("softmax_kernel", 7)], ["softmax_kernel"]
        return [MARKER, Kernel("Memcpy DtoD (Device -> Device)", 13, "gpu_memcpy")], []

    e = _run(_candidate(Counted), profiler)
    assert e["decision"] == "reject" and "profiled baseline batch" in e["reason"] and "stream 13" in e["reason"]


def _spin(stop):
    while not stop.is_set():
        time.sleep(0.001)


def test_a_thread_the_submission_leaves_running_rejects_it_named():
    """busy_thread's trick seen from the host: a thread started by the submission's call runs its code
    while the judge measures. Found by the thread's frames (here: this file stands for the submission's)."""
    stop = threading.Event()

    class Threaded:
        @staticmethod
        def softmax(x):
            if not any(t.name == "keep-busy" for t in threading.enumerate()):
                threading.Thread(target=_spin, args=(stop,), name="keep-busy", daemon=True).start()
            return SoftmaxModule.softmax(x)

    try:
        cand = CheckedCandidate(gate=Threaded, timed=Threaded, triton=False, own_kernels=frozenset(), files=[__file__])
        e = _run(cand, None)
        assert e["decision"] == "reject" and "keep-busy (_spin, test_perf_checks.py:" in e["reason"]
        assert submission_threads([__file__]) and not submission_threads([])
    finally:
        stop.set()
    for t in threading.enumerate():
        if t.name == "keep-busy":
            t.join(5)
    assert submission_threads([__file__]) == []  # a thread that ended is no longer found


def test_the_autotuners_choices_go_into_the_entrys_evidence(monkeypatch):
    import infralab.perf.run as run_module
    seen = []
    chosen = {"softmax_kernel": {"300, torch.float32": "BLOCK: 512, num_warps: 4"}}
    monkeypatch.setattr(run_module, "autotuned_configs", lambda files: seen.append(files) or chosen)
    e = _run(_candidate(SoftmaxModule), lambda run: (run(), ([MARKER, Kernel("softmax_kernel", 7)],
                                                             ["softmax_kernel"]))[1])
    assert e["evidence"]["autotuned"] == chosen and seen == [[]]  # the candidate's files (none here)
    monkeypatch.setattr(run_module, "autotuned_configs", lambda files: {})
    assert "autotuned" not in _run(_candidate(SoftmaxModule), None)["evidence"]


def test_a_cublas_kernel_in_the_profiled_batch_rejects_the_answer_even_when_right():
    e = _run(_candidate(SoftmaxModule), lambda run: (run(), ([MARKER, Kernel("softmax_kernel", 7), NVJET],
                                                             ["softmax_kernel"]))[1])
    assert e["decision"] == "reject" and "nvjet_tst" in e["reason"] and "profiled timed batch" in e["reason"]


def test_a_source_problem_rejects_before_any_call():
    class Never:
        @staticmethod
        def softmax(x):
            raise AssertionError("called")

    e = _run(_candidate(Never, problem="x.py, line 3: torch.compile"), None)
    assert e["decision"] == "reject" and "torch.compile" in e["reason"]


def test_a_timed_call_that_raises_rejects_with_the_error():
    class GateOnly:
        calls = 0

        @classmethod
        def softmax(cls, x):
            cls.calls += 1
            if cls.calls > 3:
                raise RuntimeError("no Triton kernel this time")
            return torch.softmax(x.float(), -1).to(x.dtype)

    e = _run(_candidate(GateOnly), None)
    assert e["decision"] == "reject" and "a timed call failed" in e["reason"] and "no Triton kernel" in e["reason"]


def test_the_timed_view_runs_the_same_module_object_as_the_gate():
    from infralab.perf.checked import checked_candidate
    from infralab.course import load_course
    from infralab.targets import InProcessTarget, parse_target
    course = load_course(None)
    tgt = InProcessTarget(parse_target("solutions", course.root), {}, frozenset({"part03_kernels.softmax"}))
    try:
        cand = checked_candidate(tgt.load("part03_kernels.softmax"), triton=True)
        assert cand.timed._module is cand.gate._module and cand.own_kernels == {"softmax_kernel"}
        assert cand.problem is None and any(f.endswith("softmax.py") for f in cand.files)
    finally:
        tgt.close()


def test_timed_calls_run_the_real_guards_own_kernels_pass_and_torch_compute_is_refused():
    """The timed view with the kit's real guards (CPU, Triton interpreter): the reference softmax
    runs; a torch softmax in the timed call is refused at the dispatcher."""
    from infralab.course import load_course
    from infralab.guards import BannedCall
    from infralab.perf.checked import checked_candidate
    from infralab.targets import InProcessTarget, parse_target
    course = load_course(None)
    tgt = InProcessTarget(parse_target("solutions", course.root), {}, frozenset({"part03_kernels.softmax"}))
    try:
        cand = checked_candidate(tgt.load("part03_kernels.softmax"), triton=True)
        x = torch.randn(4, 33)
        torch.testing.assert_close(cand.timed.softmax(x), torch.softmax(x, -1))
        view = type(cand.timed)(torch.nn.functional, "torch", (), True, cand.own_kernels)
        with pytest.raises(BannedCall):
            view.softmax(x, -1)
    finally:
        tgt.close()


def test_torch_compile_in_a_hostile_sample_is_found_at_load():
    from infralab.course import load_course
    from infralab.perf.checked import checked_candidate
    from infralab.targets import InProcessTarget, parse_target
    course = load_course(None)
    sample = course.root / "fixtures" / "submissions_gpu" / "compile_rmsnorm"
    tgt = InProcessTarget(parse_target(str(sample), course.root), {}, frozenset({"part03_kernels.rmsnorm"}))
    try:
        cand = checked_candidate(tgt.load("part03_kernels.rmsnorm"), triton=True)
        assert cand.problem and "torch.compile" in cand.problem and "rmsnorm.py" in cand.problem
    finally:
        tgt.close()



def test_a_torch_compile_hidden_from_the_text_is_found_on_the_loaded_module():
    import types
    mod = types.ModuleType("hidden")
    compiler = getattr(torch, "comp" + "ile")
    mod.table = {"add": compiler(lambda x, y: x + y)}  # compiling is lazy: nothing runs here
    from infralab.perf.checked import compiled_object
    assert compiled_object(mod) == "table[0]"
    mod.table = {}
    assert compiled_object(mod) is None


def test_nested_watches_with_equal_contents_close_in_any_order():
    """The profiled batch's watch and a timed call's watch are both empty when opened: closing one
    must not remove the other (the H200 run failed with list.remove when they compared equal)."""
    from infralab import triton_watch
    from infralab.triton_watch import watching

    def launch(tag):  # what a launch does: every open watch records it
        for w in list(triton_watch._ACTIVE):
            w.launches.append(tag)

    with watching(poison_allocations=False, record_writes=False) as profiled:
        for tag in ("first timed call", "second timed call"):
            with watching(poison_allocations=False, record_writes=False):
                launch(tag)
    assert profiled.launches == ["first timed call", "second timed call"] and not triton_watch._ACTIVE


def _compiled_kernel(name: str, launched: list):
    """A triton CompiledKernel whose launcher handle only records its calls (no GPU needed)."""
    from triton.compiler.compiler import CompiledKernel
    kernel = CompiledKernel.__new__(CompiledKernel)
    kernel.name, kernel.module, kernel._run = name, object(), lambda *args: launched.append(args[:4])
    return kernel


def test_launches_through_the_triton_launcher_record_their_stream():
    """``kernel[grid](...)`` and a warmed-up kernel's ``[grid](..., stream=...)`` both launch through
    ``CompiledKernel.run``: the watch records each launch's stream there, and nothing outside a watch."""
    from infralab.triton_watch import watching
    launched: list = []
    kernel = _compiled_kernel("add_kernel", launched)
    kernel.run(1, 1, 1, 11, None)  # no watch open: launched, not recorded
    with watching(poison_allocations=False, record_writes=False) as watch:
        kernel.run(4, 1, 1, 13, None, "packed", None, None, None)
    assert launched == [(1, 1, 1, 11), (4, 1, 1, 13)] and watch.streams == [("add_kernel", 13)]


def test_a_timed_call_launching_on_a_side_stream_is_refused_with_the_streams(monkeypatch):
    """The hole it closes: an armed batch's calls are enqueued behind the gate before the judge's clock
    starts, so a kernel launched on a side stream (and waited for) in the call runs untimed. Every
    compiled launch of a timed call must go to the stream current when the call began."""
    import types

    from infralab.perf import checked
    launched: list = []
    real, side = _compiled_kernel("decode_kernel", launched), _compiled_kernel("copy_kernel", launched)

    def add(x, y):  # the real work on stream 13, the timed stream (7) gets a copy of the answer
        real.run(8, 1, 1, 13, None)
        side.run(1, 1, 1, 7, None)
        from infralab import triton_watch
        for w in list(triton_watch._ACTIVE):  # what watched_run records for a kernel[grid] launch
            w.launches.append(triton_watch.Launch("copy_kernel", "add.py"))
        return x.clone()

    monkeypatch.setattr(checked, "_current_stream", lambda: 7)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(cuda_stream=7))
    view = checked._TimedView(types.SimpleNamespace(add=add), "add.py", (), True,
                              frozenset({"decode_kernel", "copy_kernel"}))
    with pytest.raises(checked.SideStreamLaunch) as err:
        view.add(torch.ones(2), torch.ones(2))
    assert "decode_kernel" in str(err.value) and "0xd" in str(err.value) and "(0x7)" in str(err.value)
    launched.clear()

    def honest(x, y):
        side.run(1, 1, 1, 7, None)
        from infralab import triton_watch
        for w in list(triton_watch._ACTIVE):
            w.launches.append(triton_watch.Launch("copy_kernel", "add.py"))
        return x.clone()
    view = checked._TimedView(types.SimpleNamespace(add=honest), "add.py", (), True, frozenset({"copy_kernel"}))
    assert torch.equal(view.add(torch.ones(2), torch.ones(2)), torch.ones(2))


def test_a_timed_torch_op_issued_on_a_side_stream_is_refused_at_the_dispatcher(monkeypatch):
    """The same rule for torch ops, at the aten dispatcher: an op issued while another stream is current
    (``with torch.cuda.stream(side): ...``) would run beside the judge's clock."""
    import types

    from infralab.guards import BannedCall
    from infralab.perf import checked
    current = {"stream": 7}
    monkeypatch.setattr(checked, "_current_stream", lambda: 7)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(cuda_stream=current["stream"]))

    def add(x, y):
        current["stream"] = 13  # what entering torch.cuda.stream(side) does
        try:
            return x + y
        finally:
            current["stream"] = 7
    view = checked._TimedView(types.SimpleNamespace(add=add, mul=lambda x, y: x * y), "add.py", (), False, frozenset())
    with pytest.raises(BannedCall) as err:
        view.add(torch.ones(2), torch.ones(2))
    assert "aten.add" in str(err.value) and "0xd" in str(err.value) and "0x7" in str(err.value)
    assert torch.equal(view.mul(torch.ones(2), torch.ones(2)), torch.ones(2))  # on the timed stream: fine
