"""Issue #12 probe (a CPU is enough): through the real cage, how much longer the judge's clock runs
than the cage's own time of an armed batch, by batch size, with and without a kept output. On the
H200 the caged small vector_add read ~0.5 ms per batch more than its CUDA events beyond an empty
batch's round trip (docs/performance.md, "`grade --gpu` on the H200"); this shows whether the same
excess appears on a CPU, where an armed batch simply runs at the go (the kernel under the interpreter).
  python3 benchmarks/probe_cage_roundtrip.py [REPEATS]
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infralab.course import load_course  # noqa: E402
from infralab.judge.cage import CageLimits  # noqa: E402
from infralab.judge.config import JudgeConfig  # noqa: E402
from infralab.judge.isolated import IsolatedTarget  # noqa: E402
from infralab.perf.caged import RemoteBench  # noqa: E402
from infralab.perf.workloads import WORKLOADS  # noqa: E402
from infralab.targets import submission_target  # noqa: E402


def main(repeats: int = 15) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "probe"
        (sub / "part03_kernels").mkdir(parents=True)
        (sub / "part03_kernels" / "vector_add.py").write_text(
            (ROOT / "solutions" / "part03_kernels" / "vector_add.py").read_text())
        target = IsolatedTarget(submission_target(sub, ROOT), JudgeConfig.from_course(load_course(ROOT)),
                                CageLimits(call_timeout_s=60.0, budget_s=600.0, gpu=True))  # perf_ops is loaded
        try:
            bench = RemoteBench(target.load("part03_kernels.vector_add"))
            wl = WORKLOADS["vector_add"]
            bench.prepare(workload="vector_add", shape={"N": 3000}, dtype="float32", options=dict(wl.options),
                          seeds=[1, 2, 3, 4], ragged=False, device="cpu", poison=False)
            for calls, kept in ((0, False), (1, False), (1, True), (5, False), (5, True)):
                judge, cage = [], []
                for _ in range(repeats):
                    bench.run(calls, 0, [0] if kept else [], arm=5.0)
                    t0 = time.perf_counter()
                    answer = bench.go()
                    judge.append(time.perf_counter() - t0)
                    cage.append(answer["inner_s"])
                    if kept:
                        bench.fetch(None)
                j, c = statistics.median(judge), statistics.median(cage)
                excess = statistics.median(a - b for a, b in zip(judge, cage))
                print(f"calls {calls}  kept {kept!s:5}  judge {j * 1e3:8.3f} ms  cage {c * 1e3:8.3f} ms  "
                      f"judge - cage {excess * 1e3:6.3f} ms", flush=True)
        finally:
            target.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
