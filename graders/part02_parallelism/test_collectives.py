"""Hidden tests for part02_parallelism.collectives (simulated group and gloo, world sizes 1-4)."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.distributed import assert_ring_traffic, run_calls, run_ranks
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, expect, randn

MODULE = "part02_parallelism.collectives"
DTYPES = [torch.float32, torch.float64, torch.int64]


def draw(shape, dtype, g):
    if dtype.is_floating_point:
        return randn(*shape, dtype=dtype, generator=g)
    return torch.randint(-1000, 1000, shape, generator=g, dtype=dtype)


def per_rank(xs, n):
    return [(x, r, n) for r, x in enumerate(xs)]


def bounds(numel, n):
    sizes = [len(c) for c in torch.tensor_split(torch.arange(numel), n)]
    starts = [sum(sizes[:c]) for c in range(n)]
    return [(s, s + z) for s, z in zip(starts, sizes)]


# --- a reference ring, and the rings of known mistakes, to name what a wrong answer looks like

def simulated_ring_all_reduce(xs, send_chunk=lambda r, s, n: (r - s - 1) % n, steps=None, owned=lambda r, n: r):
    """All ranks' results of a ring reduce-scatter + all-gather (rank r starts it from chunk owned(r));
    each step uses the values of the step before."""
    n = len(xs)
    steps = n - 1 if steps is None else steps
    flat = [x.reshape(-1).clone() for x in xs]
    b = bounds(flat[0].numel(), n)
    for s in range(steps):  # reduce-scatter
        sent = [flat[r][slice(*b[send_chunk(r, s, n)])].clone() for r in range(n)]
        for r in range(n):
            src = (r - 1) % n
            flat[r][slice(*b[send_chunk(src, s, n)])] += sent[src]
    for s in range(n - 1):  # all-gather of what each rank ended with
        sent = [(owned(r, n) - s) % n for r in range(n)]
        values = [flat[r][slice(*b[sent[r]])].clone() for r in range(n)]
        for r in range(n):
            src = (r - 1) % n
            flat[r][slice(*b[sent[src]])] = values[src]
    return [f.reshape(xs[0].shape) for f in flat]


def all_reduce_mistakes(xs, rank):
    return {
        ("the chunk index ignores the rank offset (chunk (-s-1) % n sent at step s): partial sums of the wrong chunk travel",
         "块索引忽略了 rank 偏移（第 s 步发送块 (-s-1) % n）：传递的是错误块的部分和"):
            lambda: simulated_ring_all_reduce(xs, send_chunk=lambda r, s, n: (-s - 1) % n)[rank],
        ("n steps per phase instead of n - 1: a chunk is added twice", "每个阶段 n 步而不是 n - 1 步：有一个块被加了两次"):
            lambda: simulated_ring_all_reduce(xs, steps=len(xs), owned=lambda r, n: (r - 1) % n)[rank],
        ("this rank's own input returned (nothing was reduced)", "返回了本 rank 自己的输入（什么都没有归约）"): lambda: xs[rank],
    }


@given(n=st.integers(1, 4), numel=st.integers(1, 23), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31 - 1))
def test_ring_all_reduce_sums_any_size_on_the_simulated_group(impl, n, numel, dtype, seed):
    numel = max(numel, n)
    g = torch.Generator().manual_seed(seed)
    xs = [draw((numel,), dtype, g) for _ in range(n)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", per_rank(xs, n))
    expected = sum(xs)
    for rank, res in enumerate(results):
        assert_close(res.value, expected, name=(f"rank {rank}'s all-reduce of {numel} elements over {n} ranks",
                                                f"rank {rank} 上 {numel} 个元素在 {n} 个 rank 间的 all-reduce"),
                     mistakes=all_reduce_mistakes(xs, rank))


@pytest.mark.weight(2)
@pytest.mark.parametrize("n,shape", [(2, (5, 3)), (3, (7,)), (3, (4, 5)), (4, (9,))])
def test_ring_all_reduce_keeps_shape_and_leaves_inputs_untouched(impl, gen, n, shape):
    xs = [randn(*shape, generator=gen) for _ in range(n)]
    before = [x.clone() for x in xs]
    results = run_ranks(impl, MODULE, "ring_all_reduce", per_rank(xs, n))
    for rank, res in enumerate(results):
        assert_close(res.value, sum(before), name=f"rank {rank}", mistakes=all_reduce_mistakes(before, rank))
    expect(all(torch.equal(x, b) for x, b in zip(xs, before)), "check.modified_input", name="ring_all_reduce")


@pytest.mark.weight(3)
@pytest.mark.parametrize("n,numel", [(2, 9), (3, 10), (3, 11), (4, 13)])
def test_ring_all_reduce_sends_2_n_minus_1_chunk_sized_messages_to_the_next_rank(impl, gen, n, numel):
    """A ring, not a gather on rank 0: 2(n-1) messages per rank, each one chunk, to rank + 1."""
    xs = [randn(numel, generator=gen) for _ in range(n)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", per_rank(xs, n))
    assert_ring_traffic(results, numel, n, phases=2, name="ring_all_reduce")
    total = sum(size for res in results for _, size in res.sends)
    expect(total == 2 * (n - 1) * numel, "part02.collectives.ring_total", total=total, expected=2 * (n - 1) * numel)


@given(n=st.integers(1, 4), numel=st.integers(1, 19), seed=st.integers(0, 2**31 - 1))
def test_ring_reduce_scatter_gives_each_rank_its_own_chunk(impl, n, numel, seed):
    numel = max(numel, n)
    g = torch.Generator().manual_seed(seed)
    xs = [randn(numel, generator=g) for _ in range(n)]
    results = run_ranks(impl, MODULE, "ring_reduce_scatter", per_rank(xs, n))
    total, b = sum(xs), bounds(numel, n)
    for rank, res in enumerate(results):
        assert_close(res.value, total[slice(*b[rank])], name=(f"rank {rank}'s reduced chunk", f"rank {rank} 归约后的块"),
                     mistakes={("returned chunk (rank + 1) % n, where the plain ring ends, not chunk rank",
                                "返回了普通环结束处的块 (rank + 1) % n，而不是块 rank"):
                               lambda: total[slice(*b[(rank + 1) % n])],
                               ("chunks split torch.chunk style (ceil sizes) instead of tensor_split style",
                                "按 torch.chunk 方式（向上取整的大小）切块，而不是 tensor_split 方式"):
                               lambda: torch.chunk(total, n)[rank]})
    assert_ring_traffic(results, numel, n, phases=1, name="ring_reduce_scatter")


@given(n=st.integers(1, 4), rows=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_ring_all_gather_orders_blocks_by_rank(impl, n, rows, seed):
    g = torch.Generator().manual_seed(seed)
    xs = [randn(rows, 3, generator=g) for _ in range(n)]
    results = run_ranks(impl, MODULE, "ring_all_gather", per_rank(xs, n))
    for rank, res in enumerate(results):
        arrival = torch.cat([xs[(rank - s) % n] for s in range(n)])
        assert_close(res.value, torch.cat(xs), name=(f"rank {rank}'s gathered tensor", f"rank {rank} 收集到的张量"),
                     mistakes={("blocks concatenated in arrival order (own, rank-1, rank-2, ...) instead of rank order",
                                "按到达顺序（自己、rank-1、rank-2、……）拼接块，而不是按 rank 顺序"):
                               arrival})
    assert_ring_traffic(results, rows * 3 * n, n, phases=1, name="ring_all_gather")


@given(n=st.integers(1, 4), size=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_all_to_all_delivers_chunk_j_to_rank_j(impl, n, size, seed):
    g = torch.Generator().manual_seed(seed)
    chunks = [[randn(size, 2, generator=g) for _ in range(n)] for _ in range(n)]  # chunks[src][dst]
    results = run_ranks(impl, MODULE, "all_to_all", [(chunks[r], r, n) for r in range(n)])
    for rank, res in enumerate(results):
        if not isinstance(res.value, (list, tuple)) or len(res.value) != n:
            raise Mismatch(tr("part02.collectives.chunk_list", rank=rank, n=n, got=type(res.value).__name__))
        for src in range(n):
            assert_close(res.value[src], chunks[src][rank], name=(f"rank {rank}'s chunk from rank {src}",
                                                                  f"rank {rank} 从 rank {src} 收到的块"),
                         mistakes={("returned this rank's own chunks (nothing exchanged)",
                                    "返回了本 rank 自己的块（没有交换）"): chunks[rank][src]})
        sent_to = sorted(d for d, _ in res.sends)
        peers = [q for q in range(n) if q != rank]
        expect(sent_to == peers, "part02.collectives.all_to_all_peers", rank=rank, got=sent_to, expected=peers)
        expect(all(size_ == size * 2 for _, size_ in res.sends), "part02.collectives.all_to_all_sizes", rank=rank,
               got=[size_ for _, size_ in res.sends], expected=size * 2)


def test_library_collectives_are_not_what_the_ring_uses(impl, gen):
    """Every message of the all-reduce is a dist.isend/irecv/send/recv the harness counted."""
    xs = [randn(6, generator=gen) for _ in range(3)]
    results = run_ranks(impl, MODULE, "ring_all_reduce", per_rank(xs, 3))
    expect(all(res.sends and res.recvs for res in results), "part02.collectives.silent_rank",
           sends=[len(res.sends) for res in results], recvs=[len(res.recvs) for res in results])


@pytest.mark.timeout(120)
@pytest.mark.weight(3)
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_on_real_gloo_processes(impl, gen, n):
    """The same functions on torch.distributed with gloo, one process per rank, uneven sizes."""
    numel = 3 * n + 2
    xs = [randn(numel, generator=gen) for _ in range(n)]
    blocks = [randn(2, 2, generator=gen) for _ in range(n)]
    chunks = [[randn(3, generator=gen) for _ in range(n)] for _ in range(n)]
    calls = [("ring_all_reduce", per_rank(xs, n)), ("ring_reduce_scatter", per_rank(xs, n)),
             ("ring_all_gather", per_rank(blocks, n)), ("all_to_all", [(chunks[r], r, n) for r in range(n)])]
    reduce_all, scatter, gather, a2a = run_calls(impl, MODULE, calls, n, backend="gloo", timeout_s=30)
    total, b = sum(xs), bounds(numel, n)
    for rank in range(n):
        assert_close(reduce_all[rank].value, total, name=(f"gloo rank {rank}: all-reduce",
                                                          f"gloo 后端 rank {rank}：all-reduce"),
                     mistakes=all_reduce_mistakes(xs, rank))
        assert_close(scatter[rank].value, total[slice(*b[rank])], name=(f"gloo rank {rank}: reduce-scatter",
                                                                        f"gloo 后端 rank {rank}：reduce-scatter"))
        assert_close(gather[rank].value, torch.cat(blocks), name=(f"gloo rank {rank}: all-gather",
                                                                  f"gloo 后端 rank {rank}：all-gather"),
                     mistakes={("blocks in arrival order",
                                "块按到达顺序排列"): torch.cat([blocks[(rank - s) % n] for s in range(n)])})
        for src in range(n):
            assert_close(a2a[rank].value[src], chunks[src][rank], name=(f"gloo rank {rank}: all-to-all from {src}",
                                                                        f"gloo 后端 rank {rank}：来自 {src} 的 all-to-all"))
    assert_ring_traffic(reduce_all, numel, n, phases=2, name="gloo ring_all_reduce")


def expected_bandwidth(collective, size, seconds, n):
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "all_to_all": (n - 1) / n, "broadcast": 1.0, "reduce": 1.0}[collective]
    algbw = size / seconds / 1e9
    return torch.tensor([algbw, algbw * factor], dtype=torch.float64)


@pytest.mark.weight(2)
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce"])
@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_bus_bandwidth_follows_nccl_tests(impl, collective, n):
    size, seconds = 3 * 2**30, 0.0125
    got = impl(MODULE).bus_bandwidth(collective, size, seconds, n)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Mismatch(tr("part02.collectives.bandwidth_pair", got=repr(got)))
    algbw = size / seconds / 1e9
    assert_close(torch.tensor([float(v) for v in got], dtype=torch.float64),
                 expected_bandwidth(collective, size, seconds, n), name=(f"(algbw, busbw) of {collective}, n={n}",
                                                                         f"{collective} 的 (algbw, busbw)，n={n}"),
                 mistakes={("bus factor n/(n-1) instead of (n-1)/n", "总线系数用了 n/(n-1)，而不是 (n-1)/n"):
                           lambda: torch.tensor([algbw, algbw * n / (n - 1) * (2 if collective == "all_reduce" else 1)],
                                                dtype=torch.float64),
                           ("all-reduce factor (n-1)/n (the 2 for its two phases is missing)",
                            "all-reduce 系数用了 (n-1)/n（缺了两个阶段的因子 2）"):
                           lambda: torch.tensor([algbw, algbw * (n - 1) / n], dtype=torch.float64),
                           ("bandwidth in GiB/s (2**30) instead of GB/s (1e9)",
                            "带宽单位用了 GiB/s（2**30），而不是 GB/s（1e9）"):
                           lambda: expected_bandwidth(collective, size, seconds, n) * 1e9 / 2**30})


def test_bus_bandwidth_rejects_unknown_collectives_and_zero_time(impl):
    with pytest.raises(ValueError):
        impl(MODULE).bus_bandwidth("allreduce_ring", 1024, 1.0, 2)
    with pytest.raises(ValueError):
        impl(MODULE).bus_bandwidth("all_reduce", 1024, 0.0, 2)
    with pytest.raises(ValueError):
        impl(MODULE).bus_bandwidth("all_reduce", -1, 1.0, 2)


def test_bus_bandwidth_of_an_empty_buffer_is_zero(impl):
    got = impl(MODULE).bus_bandwidth("all_reduce", 0, 1e-3, 4)
    assert_close(torch.tensor([float(v) for v in got]), torch.zeros(2), name=("(algbw, busbw) of 0 bytes",
                                                                              "0 字节的 (algbw, busbw)"))


@given(numel=st.integers(0, 60), n=st.integers(1, 6))
def test_chunk_bounds_split_like_tensor_split(impl, numel, n):
    got = impl(MODULE).chunk_bounds(numel, n)
    got = [tuple(int(v) for v in c) for c in got] if isinstance(got, (list, tuple)) else got
    ceil = -(-numel // n) if n else 0
    assert_equal(got, bounds(numel, n), name=f"chunk_bounds({numel}, {n})",
                 mistakes={("torch.chunk style: every chunk ceil(numel / n), the last ones short or empty",
                            "torch.chunk 的切法：每块 ceil(numel / n)，最后几块偏短或为空"):
                           [(min(c * ceil, numel), min((c + 1) * ceil, numel)) for c in range(n)]})
