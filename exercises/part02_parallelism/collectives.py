"""Collectives built from send/recv: ring reduce-scatter, all-gather, all-reduce; all-to-all; busbw.

Textbook 02 §2.1 (communication primitives) and 03 §3.2 (ring all-reduce, bus bandwidth).

Data parallelism averages gradients with an all-reduce; NCCL's ring algorithm does it in two
phases: a **reduce-scatter** (n - 1 steps; after it, rank r holds the full sum of one chunk)
then an **all-gather** (n - 1 steps; every rank receives every reduced chunk). Each step, each
rank sends one chunk (about 1/n of the data) to rank + 1 and receives one from rank - 1, so each
rank sends 2(n-1)/n of the data in total, whatever n is: that is why the ring is bandwidth-optimal
and why nccl-tests reports "bus bandwidth" = algbw x 2(n-1)/n.

How your code runs (SPMD). Every function here is called on **every rank at once**, each call
with its own ``rank`` and its own data, the way a training script runs under ``torchrun``. Talk
to the other ranks only with point-to-point calls of ``torch.distributed``, written through the
module (``import torch.distributed as dist`` then ``dist.isend(...)``, ``dist.recv(...)``)::

    dist.send(tensor, dst)          # returns when rank dst has received it (a rendezvous)
    dist.recv(tensor, src)          # fills `tensor` (its numel and dtype must match the message)
    req = dist.isend(tensor, dst); ...; req.wait()
    req = dist.irecv(tensor, src); ...; req.wait()

Library collectives (``dist.all_reduce``, ``dist.all_gather``, ...) raise an error here: build
them yourself. The tests run your functions on a simulated group (one thread per rank, in one
process) and on real ``torch.distributed`` with the gloo backend (one process per rank), with
world sizes 2 and 3, and they count your messages: a ring all-reduce sends exactly 2(n-1)
messages per rank, each to rank + 1 and of one chunk's size; gathering everything on rank 0
and sending the sum back is correct but is not a ring, and fails.

Deadlock: ``dist.send`` does not return until the receiver has posted the matching ``recv``
(measured on gloo, even for 10 elements). If every rank calls ``send`` first, every rank waits
forever. Post the send with ``dist.isend``, then ``dist.recv``, then ``req.wait()``.

Why this interface: in grading, tests and your code live in different processes and only data
(tensors, numbers, lists) crosses between them, so the test cannot hand you a communicator
object. Functions of ``(data, rank, world_size)`` that use ``torch.distributed`` directly run
unchanged on every rank of a real group, and the test harness can count each ``dist`` call.

中文说明：
本练习在每个 rank 上同时运行同一个函数（SPMD），只能用 ``dist.send/recv/isend/irecv`` 点对点通信，
自己实现集合通信。环形 AllReduce = ReduceScatter（n-1 步，每步把一个块发给右邻居、从左邻居收一个块
并累加）+ AllGather（n-1 步，把已规约好的块沿环传一圈）。每个 rank 一共发 2(n-1) 条消息，每条约
1/n 的数据，因此每个 rank 的发送量是 2(n-1)/n 倍数据量，与 n 基本无关——这就是 busbw 公式的来源。
注意 gloo 上 ``send`` 要等对方 ``recv`` 才返回，所有 rank 都先 send 会死锁：先 isend、再 recv、最后 wait。
张量长度不能被 n 整除时，块大小相差 1（前 numel % n 个块多一个元素）。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what your implementation talks through)


def chunk_bounds(numel: int, world_size: int) -> list[tuple[int, int]]:
    """Split ``numel`` elements into ``world_size`` contiguous chunks: their [start, end).

    Args:
        numel: number of elements (>= 0).
        world_size: number of chunks (>= 1).

    Returns:
        ``world_size`` pairs ``(start, end)``, back to back from 0 to ``numel``. Sizes differ by
        at most one: the first ``numel % world_size`` chunks have ``numel // world_size + 1``
        elements, the others ``numel // world_size`` (``torch.tensor_split``'s convention).
        Example: ``chunk_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]``.

    中文：把 numel 个元素切成 world_size 个连续块，前 numel % world_size 块各多一个元素。
    """
    raise NotImplementedError("chunk_bounds")


def ring_reduce_scatter(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Ring reduce-scatter: this rank gets the sum over all ranks of chunk ``rank``.

    Args:
        tensor: this rank's input, any shape, float or integer dtype; every rank passes the same
            shape and dtype. Not modified.
        rank, world_size: this rank and the group size (world_size >= 1; tests use numel >= n).

    Returns:
        1-D tensor of ``tensor.dtype``: ``sum over ranks q of tensor_q.flatten()[start:end]``
        where ``(start, end) = chunk_bounds(tensor.numel(), world_size)[rank]``.

    Algorithm (ring, n - 1 steps): at step s (0 .. n-2) rank r sends its running partial sum of
    chunk ``(r - s - 1) % n`` to rank ``(r + 1) % n`` and receives chunk ``(r - s - 2) % n``
    from rank ``(r - 1) % n``, adding it to its own copy. After the last step the chunk rank r
    received last is chunk r, complete. Messages per rank: n - 1, each one chunk.

    中文：环形 ReduceScatter；第 s 步发送块 (r-s-1)%n、接收并累加块 (r-s-2)%n，n-1 步后本 rank 的
    第 rank 块是所有 rank 之和。
    """
    raise NotImplementedError("ring_reduce_scatter")


def ring_all_gather(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Ring all-gather: every rank's tensor, concatenated along dim 0 in rank order.

    Args:
        tensor: this rank's block, shape ``(b, ...)`` (the same shape and dtype on every rank).
        rank, world_size: this rank and the group size.

    Returns:
        ``(world_size * b, ...)`` tensor: ``torch.cat([tensor_0, tensor_1, ..., tensor_{n-1}])``
        (block q comes from rank q, whatever order the blocks arrived in).

    Algorithm (ring, n - 1 steps): at step s rank r forwards block ``(r - s) % n`` to rank
    r + 1 and receives block ``(r - s - 1) % n`` from rank r - 1. Messages per rank: n - 1,
    each one block.

    中文：环形 AllGather；按 rank 顺序（而不是到达顺序）拼接各 rank 的块。
    """
    raise NotImplementedError("ring_all_gather")


def ring_all_reduce(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Ring all-reduce (sum): reduce-scatter then all-gather, built from send/recv.

    Args:
        tensor: this rank's input, any shape, float or integer dtype; every rank passes the same
            shape and dtype. Not modified.
        rank, world_size: this rank and the group size.

    Returns:
        A new tensor of ``tensor``'s shape and dtype: the elementwise sum over all ranks.

    Algorithm: flatten; split with :func:`chunk_bounds`; n - 1 reduce-scatter steps (as in
    :func:`ring_reduce_scatter`, so rank r ends with chunk r complete), then n - 1 all-gather
    steps over the (possibly uneven) chunks: at step s send chunk ``(r - s) % n``, receive
    chunk ``(r - s - 1) % n``. Exactly 2(n - 1) messages per rank, all to rank + 1, each of one
    chunk's size; nothing else (no all-to-one reduction, no broadcast).

    中文：环形 AllReduce = ReduceScatter + AllGather，每个 rank 恰好发送 2(n-1) 条消息，每条一个块。
    """
    raise NotImplementedError("ring_all_reduce")


def all_to_all(chunks: list[torch.Tensor], rank: int, world_size: int) -> list[torch.Tensor]:
    """All-to-all: chunk j of this rank goes to rank j; return what every rank sent to this one.

    Args:
        chunks: ``world_size`` tensors; ``chunks[j]`` is addressed to rank j. All chunks on all
            ranks have the same shape and dtype (``all_to_all`` with equal splits, as in the
            expert-parallel dispatch of MoE).
        rank, world_size: this rank and the group size.

    Returns:
        ``world_size`` tensors: ``out[q]`` is ``chunks[rank]`` of rank q (``out[rank]`` is this
        rank's own ``chunks[rank]``, which is not sent anywhere).

    Algorithm (pairwise exchange, n - 1 steps): at step s (1 .. n-1) send ``chunks[(r + s) % n]``
    to rank ``(r + s) % n`` and receive ``out[(r - s) % n]`` from rank ``(r - s) % n``.
    Messages per rank: n - 1, each one chunk.

    中文：AllToAll；本 rank 的第 j 块发给 rank j，返回列表第 q 项是 rank q 发给本 rank 的块。
    """
    raise NotImplementedError("all_to_all")


def bus_bandwidth(collective: str, size_bytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """Algorithm and bus bandwidth of a measured collective, in GB/s (1e9 bytes/s), as nccl-tests.

    Args:
        collective: ``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``, ``"all_to_all"``,
            ``"broadcast"`` or ``"reduce"``; anything else raises ``ValueError``.
        size_bytes: nccl-tests' "size": the all-reduce buffer; the *gathered output* of an
            all-gather; the *input* of a reduce-scatter (both n x the per-rank piece); the send
            buffer of an all-to-all; the broadcast/reduce buffer (>= 0, else ``ValueError``; 0 gives 0).
        seconds: the measured time of one operation (> 0, else ``ValueError``).
        world_size: number of ranks n (>= 1).

    Returns:
        ``(algbw, busbw)``::

            algbw = size_bytes / seconds / 1e9
            busbw = algbw * factor,  factor = 2(n-1)/n   all_reduce
                                               (n-1)/n   all_gather, reduce_scatter, all_to_all
                                               1         broadcast, reduce

        busbw is what each link carries, comparable with the hardware's link bandwidth
        whatever n is (03 §3.2).

    中文：algbw = 数据量 / 时间（数据量 >= 0，否则 ValueError）；busbw = algbw × 系数（AllReduce 为 2(n-1)/n，AllGather、
    ReduceScatter、AllToAll 为 (n-1)/n），可以直接和链路带宽比较。
    """
    raise NotImplementedError("bus_bandwidth")
