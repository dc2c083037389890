"""Reference solution of part02_parallelism.pipeline: schedules, a dependency-checking simulator,
closed forms, and a real 1F1B training step over send/recv."""
from __future__ import annotations

import torch
import torch.distributed as dist

Action = tuple[str, int, int]  # (kind "F" or "B", micro-batch, chunk)


def gpipe_schedule(num_stages: int, num_microbatches: int) -> list[list[Action]]:
    return [[("F", i, 0) for i in range(num_microbatches)] + [("B", i, 0) for i in range(num_microbatches)]
            for _ in range(num_stages)]


def _one_f_one_b(forwards: list[Action], backwards: list[Action], warmup: int) -> list[Action]:
    """Warm-up forwards, then one forward and one backward in turn, then the remaining backwards."""
    steady = len(forwards) - warmup
    order = forwards[:warmup]
    for i in range(steady):
        order += [forwards[warmup + i], backwards[i]]
    return order + backwards[steady:]


def one_f_one_b_schedule(num_stages: int, num_microbatches: int) -> list[list[Action]]:
    p, m = num_stages, num_microbatches
    return [_one_f_one_b([("F", i, 0) for i in range(m)], [("B", i, 0) for i in range(m)], min(p - r - 1, m))
            for r in range(p)]


def interleaved_schedule(num_stages: int, num_chunks: int, num_microbatches: int) -> list[list[Action]]:
    p, v, m = num_stages, num_chunks, num_microbatches
    if m % p:
        raise ValueError(f"the interleaved schedule needs num_microbatches ({m}) to be a multiple of num_stages ({p})")
    total = m * v

    def microbatch(k: int) -> int:
        return (k // (p * v)) * p + k % p

    forwards = [("F", microbatch(k), (k // p) % v) for k in range(total)]
    backwards = [("B", microbatch(k), v - 1 - (k // p) % v) for k in range(total)]
    return [_one_f_one_b(forwards, backwards, min((p - r - 1) * 2 + (v - 1) * p, total)) for r in range(p)]


def bubble_ratio(num_stages: int, num_microbatches: int, num_chunks: int = 1) -> float:
    p, m, v = num_stages, num_microbatches, num_chunks
    return (p - 1) / (v * m + p - 1)


def _dependencies(kind: str, microbatch: int, stage: int, num_stages_total: int) -> list[tuple[str, int, int]]:
    if kind == "F":
        return [("F", microbatch, stage - 1)] if stage > 0 else []
    deps = [("F", microbatch, stage)]
    return deps + ([("B", microbatch, stage + 1)] if stage < num_stages_total - 1 else [])


def simulate(schedule: list[list[Action]], num_microbatches: int, num_chunks: int = 1) -> dict:
    return _simulate(schedule, num_microbatches, num_chunks, _dependencies)


def _simulate(schedule: list[list[Action]], num_microbatches: int, num_chunks: int, dependencies) -> dict:
    p, m, v = len(schedule), num_microbatches, num_chunks
    total_stages = p * v
    for rank, actions in enumerate(schedule):
        expected = {(k, i, c) for k in "FB" for i in range(m) for c in range(v)}
        seen = [tuple(a) for a in actions]
        if len(seen) != len(expected) or set(seen) != expected:
            raise ValueError(f"rank {rank}: the schedule must hold one F and one B of every micro-batch 0..{m - 1} "
                             f"and chunk 0..{v - 1}, each once")
    done: set[tuple[str, int, int]] = set()
    position = [0] * p
    ticks = 0
    while pending := [r for r in range(p) if position[r] < len(schedule[r])]:
        ran = []
        for rank in pending:
            kind, i, chunk = schedule[rank][position[rank]]
            stage = chunk * p + rank
            if all(d in done for d in dependencies(kind, i, stage, total_stages)):
                ran.append((kind, i, stage))
                position[rank] += 1
        if not ran:
            waiting = "; ".join(f"rank {r} waits at {tuple(schedule[r][position[r]])}" for r in pending)
            raise ValueError(f"impossible schedule: no rank can run its next action ({waiting})")
        done.update(ran)
        ticks += 1
    busy = 2 * m * v * p
    peaks = []
    for actions in schedule:
        live = peak = 0
        for kind, _, _ in actions:
            live += 1 if kind == "F" else -1
            peak = max(peak, live)
        peaks.append(peak)
    return {"makespan": ticks, "bubble_ratio": 1 - busy / (p * ticks), "peak_in_flight": peaks}


def _stage(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ weight.T + bias)


def pipeline_1f1b_step(weight: torch.Tensor, bias: torch.Tensor, microbatches: torch.Tensor, targets: torch.Tensor,
                       rank: int, world_size: int) -> tuple:
    actions = one_f_one_b_schedule(world_size, microbatches.shape[0])[rank]
    return _train_step(actions, weight, bias, microbatches, targets, rank, world_size)


def _train_step(actions: list[Action], weight: torch.Tensor, bias: torch.Tensor, microbatches: torch.Tensor,
                targets: torch.Tensor, rank: int, world_size: int) -> tuple:
    """Run one rank's actions: activations go forward to rank + 1, gradients back to rank - 1."""
    p, m = world_size, microbatches.shape[0]
    first, last = rank == 0, rank == p - 1
    weight = weight.detach().clone().requires_grad_(True)
    bias = bias.detach().clone().requires_grad_(True)
    inputs, outputs, pending = {}, {}, []
    loss_total = torch.zeros((), dtype=weight.dtype)
    for kind, i, _ in actions:
        if kind == "F":
            x = microbatches[i].clone() if first else torch.empty_like(microbatches[i])
            if not first:
                dist.recv(x, rank - 1)
            x.requires_grad_(not first)
            y = _stage(x, weight, bias)
            if last:
                y = ((y - targets[i]) ** 2).mean() / m
                loss_total += y.detach()
            else:
                pending.append(dist.isend(y.detach().contiguous(), rank + 1))
            inputs[i], outputs[i] = x, y
        else:
            x, y = inputs.pop(i), outputs.pop(i)
            if last:
                y.backward()
            else:
                grad = torch.empty_like(y)
                dist.recv(grad, rank + 1)
                y.backward(grad)
            if not first:
                pending.append(dist.isend(x.grad.contiguous(), rank - 1))
    for request in pending:
        request.wait()
    return weight.grad, bias.grad, (loss_total if last else None)
