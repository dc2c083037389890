"""Pipeline parallelism: GPipe, 1F1B and interleaved 1F1B schedules, a simulator, and a real 1F1B step.

Textbook 02 §2.2.4 (pipeline parallelism: GPipe, 1F1B, interleaved 1F1B, the bubble).

A model of S stages is split over p ranks; a batch is cut into m micro-batches. A **schedule** says,
for every rank, the order in which it runs the forward (F) and backward (B) of each micro-batch on
its stage(s). We write a schedule as one list of actions per rank::

    schedule[rank] = [("F", microbatch, chunk), ("B", microbatch, chunk), ...]

``chunk`` is the rank's model chunk (always 0 unless the schedule is interleaved). With v chunks
per rank, chunk c of rank r is **stage c * p + r** (Megatron-LM's layout: rank 0 holds stages 0,
p, 2p, ...). Dependencies: F of micro-batch i on stage s needs F of i on stage s - 1 (its
activation is received from there); B of i on stage s needs F of i on stage s and B of i on stage
s + 1 (its gradient is received from there); the last stage's B needs only its own F.

- **GPipe**: every rank runs F of micro-batches 0..m-1, then B of 0..m-1 (ascending, as
  ``torch.distributed.pipelining.ScheduleGPipe``). Every rank holds the activations of all m
  micro-batches at once.
- **1F1B** (PipeDream-flush, Megatron-LM): rank r runs ``w = min(p - r - 1, m)`` warm-up forwards,
  then alternates one forward and one backward (F of w, B of 0, F of w+1, B of 1, ...) until the
  forwards are done, then the remaining backwards. Same bubble as GPipe, but rank r holds at most
  ``min(p - r, m)`` micro-batches in flight.
- **Interleaved 1F1B** (Megatron-LM, v chunks per rank, m a multiple of p): the k-th forward a rank
  runs (k = 0 .. m v - 1) is micro-batch ``(k // (p v)) * p + k % p`` on chunk ``(k // p) % v``;
  the k-th backward is the same micro-batch on chunk ``v - 1 - (k // p) % v``. Warm-up:
  ``w = min(2 (p - r - 1) + (v - 1) p, m v)`` forwards, then one F and one B in turn, then the
  remaining backwards, as in 1F1B.

Time model of the simulator: every action (F or B of one chunk) takes one tick; at each tick every
rank runs its next action if all its dependencies finished at an earlier tick, else it idles.
Bubble ratio = idle rank-ticks / (p x makespan). Closed forms (unit F and B):
GPipe and 1F1B ``(p - 1) / (m + p - 1)``; interleaved ``(p - 1) / (v m + p - 1)``.

The real step (:func:`pipeline_1f1b_step`) runs on every rank at once (SPMD, as under torchrun),
stage r = rank r, and talks through ``torch.distributed`` point-to-point calls only (``dist.send``,
``dist.recv``, ``dist.isend``, ``dist.irecv``); library collectives raise an error. Tests run it on a
simulated group (threads) with 2 and 4 stages, and on real gloo processes.

中文说明：
流水线并行把模型切成 p 段放在 p 个 rank 上，一个 batch 切成 m 个 micro-batch。调度表给出每个 rank
上前向（F）与反向（B）的执行顺序。GPipe 先做完所有前向再做所有反向，每个 rank 要同时保存 m 份激活；
1F1B 先做 p-r-1 次预热前向，之后前向、反向交替，最多只保存 p-r 份激活，气泡与 GPipe 相同：
(p-1)/(m+p-1)；交错式 1F1B 每个 rank 持有 v 个模型块（第 c 块是第 c*p+r 段），气泡降为
(p-1)/(vm+p-1)。模拟器按依赖关系逐拍执行，遇到不可能完成的调度（反向先于前向、收不到上一段的激活）
要报错。最后用 send/recv 在真实（模拟）进程组上跑一个 1F1B 训练步，梯度必须与不切分的模型一致。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what pipeline_1f1b_step talks through)

Action = tuple[str, int, int]  # (kind "F" or "B", micro-batch, chunk)


def gpipe_schedule(num_stages: int, num_microbatches: int) -> list[list[Action]]:
    """The GPipe schedule: all forwards, then all backwards, on every rank.

    Args:
        num_stages: number of ranks p (>= 1), one stage each.
        num_microbatches: m (>= 1).

    Returns:
        ``p`` lists; each is ``[("F", 0, 0), ..., ("F", m-1, 0), ("B", 0, 0), ..., ("B", m-1, 0)]``.

    中文：GPipe 调度；每个 rank 先做 m 次前向，再按 0..m-1 做 m 次反向。
    """
    raise NotImplementedError("gpipe_schedule")


def one_f_one_b_schedule(num_stages: int, num_microbatches: int) -> list[list[Action]]:
    """The 1F1B schedule (PipeDream-flush, Megatron-LM's non-interleaved schedule).

    Args:
        num_stages: p (>= 1).
        num_microbatches: m (>= 1).

    Returns:
        ``p`` lists of ``(kind, microbatch, 0)``. Rank r: ``w = min(p - r - 1, m)`` warm-up
        forwards F 0..w-1; then for i = 0 .. m-w-1 the pair F ``w + i``, B ``i``; then the
        remaining backwards B ``m - w`` .. ``m - 1``. Example, p = 2, m = 3:
        rank 0: F0 F1 B0 F2 B1 B2; rank 1: F0 B0 F1 B1 F2 B2.

    中文：1F1B 调度；rank r 先做 min(p-r-1, m) 次预热前向，然后一前一后交替，最后做完剩下的反向。
    """
    raise NotImplementedError("one_f_one_b_schedule")


def interleaved_schedule(num_stages: int, num_chunks: int, num_microbatches: int) -> list[list[Action]]:
    """Megatron-LM's interleaved 1F1B schedule with ``num_chunks`` model chunks per rank.

    Args:
        num_stages: p ranks (>= 1).
        num_chunks: v model chunks per rank (>= 1); chunk c of rank r is stage ``c * p + r``.
        num_microbatches: m, a multiple of p; otherwise raise ``ValueError``.

    Returns:
        ``p`` lists of ``(kind, microbatch, chunk)``, each with the F and B of every
        (micro-batch, chunk) once. The k-th forward of a rank (k = 0 .. m v - 1) is micro-batch
        ``(k // (p v)) * p + k % p`` on chunk ``(k // p) % v``; the k-th backward is micro-batch
        ``(k // (p v)) * p + k % p`` on chunk ``v - 1 - (k // p) % v`` (backward runs the chunks
        in reverse). Rank r runs ``w = min(2 (p - r - 1) + (v - 1) p, m v)`` warm-up forwards,
        then forward k = w + i and backward i in turn, then the remaining backwards.

    中文：交错式 1F1B；第 k 个前向是 micro-batch (k//(pv))*p + k%p 的第 (k//p)%v 块，反向按相反的块顺序；
    预热前向数为 min(2(p-r-1) + (v-1)p, mv)。m 不是 p 的倍数时抛 ValueError。
    """
    raise NotImplementedError("interleaved_schedule")


def bubble_ratio(num_stages: int, num_microbatches: int, num_chunks: int = 1) -> float:
    """Closed-form bubble ratio with unit-time forwards and backwards.

    Args:
        num_stages: p; num_microbatches: m; num_chunks: v (1 for GPipe and 1F1B).

    Returns:
        ``(p - 1) / (v * m + p - 1)``: the fraction of rank-time spent idle (a float).

    中文：气泡率的闭式解 (p-1)/(vm+p-1)；v=1 时就是 GPipe/1F1B 的 (p-1)/(m+p-1)。
    """
    raise NotImplementedError("bubble_ratio")


def simulate(schedule: list[list[Action]], num_microbatches: int, num_chunks: int = 1) -> dict:
    """Run a schedule tick by tick, checking every dependency; reject impossible schedules.

    Args:
        schedule: one list of ``(kind, microbatch, chunk)`` per rank (p = ``len(schedule)``).
        num_microbatches: m; num_chunks: v (stage of chunk c on rank r is ``c * p + r``).

    Returns:
        ``{"makespan": int, "bubble_ratio": float, "peak_in_flight": list[int]}``:
        makespan is the number of ticks until every rank has finished; bubble ratio is
        ``1 - (2 m v p) / (p * makespan)``; ``peak_in_flight[r]`` is the largest number of
        (micro-batch, chunk) activations rank r holds at once (forwards run minus backwards run,
        over the prefixes of its list).

    Raises:
        ValueError: a rank's list does not hold every F and B of micro-batches 0..m-1 and chunks
            0..v-1 exactly once; or at some tick no rank can run its next action (a backward
            before its forward, waiting for an activation or gradient that never comes): say
            which rank waits at which action.

    Time model: each action takes one tick; at tick t a rank runs its next action if every
    dependency (module docstring) finished at a tick before t; ranks run in parallel, each in its
    own list's order.

    中文：逐拍模拟调度：每个动作一拍，依赖全部在之前的拍完成才能执行；若某一拍所有 rank 都无法前进，
    说明调度不可能完成，抛 ValueError 并指出哪个 rank 卡在哪个动作。返回总拍数、气泡率和每个 rank
    同时持有的最大激活数。
    """
    raise NotImplementedError("simulate")


def pipeline_1f1b_step(weight: torch.Tensor, bias: torch.Tensor, microbatches: torch.Tensor, targets: torch.Tensor,
                       rank: int, world_size: int) -> tuple:
    """One training step of a p-stage MLP under the 1F1B schedule, over send/recv (SPMD).

    The model: stage r computes ``h -> tanh(h @ W_r.T + b_r)`` (width d -> d); the loss is the mean
    over the m micro-batches of ``mean((y_i - targets[i]) ** 2)``, y_i the last stage's output.

    Args:
        weight: ``(d, d)`` this rank's W_r; bias: ``(d,)`` this rank's b_r (float32 or float64).
            Not modified.
        microbatches: ``(m, b, d)`` the inputs; every rank receives them, only rank 0 reads them.
        targets: ``(m, b, d)``; only the last rank reads them.
        rank, world_size: this rank (= its stage) and p.

    Returns:
        ``(grad_weight, grad_bias, loss)``: this rank's gradients of the loss (shapes and dtype of
        weight and bias), equal to the unpipelined model's; ``loss`` is a 0-d tensor on the last
        rank and ``None`` on the others.

    Communication: run the actions of ``one_f_one_b_schedule(p, m)[rank]`` in order. F of i:
    receive the activation ``(b, d)`` from rank - 1 (rank 0 reads ``microbatches[i]``), compute,
    send the output to rank + 1 (the last rank computes the loss instead). B of i: receive the
    gradient of the output from rank + 1 (the last rank starts from its loss), back-propagate,
    send the gradient of the input to rank - 1 (rank 0 sends nothing). One message per activation
    and per gradient, in schedule order. Send with ``dist.isend`` and wait for the requests at the
    end: a blocking ``dist.send`` returns only when the peer receives, and in 1F1B two neighbours
    can both be sending to each other (deadlock).

    中文：按 1F1B 调度表在每个 rank 上执行前向/反向；前向从 rank-1 收激活、发给 rank+1，反向从 rank+1
    收梯度、发给 rank-1。用 isend 发送、最后统一 wait，避免相邻 rank 互相 send 造成死锁。返回的梯度必须
    与不做流水线时完全一致（损失是各 micro-batch 损失的平均）。
    """
    raise NotImplementedError("pipeline_1f1b_step")
