"""Collectives built from send/recv: ring reduce-scatter, all-gather, all-reduce; all-to-all; busbw.

Reference solution (textbook 02 §2.1, 03 §3.2). Every function runs on every rank (SPMD) and
talks only through ``dist.isend`` / ``dist.recv``.
"""
from __future__ import annotations

import torch
import torch.distributed as dist


def chunk_bounds(numel: int, world_size: int) -> list[tuple[int, int]]:
    """[start, end) of each of the world_size chunks; the first numel % world_size are one longer."""
    base, extra = divmod(numel, world_size)
    bounds, start = [], 0
    for c in range(world_size):
        end = start + base + (1 if c < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def _ring_exchange(send: torch.Tensor, recv: torch.Tensor, rank: int, world_size: int) -> None:
    """One ring step: send to rank + 1 while receiving from rank - 1 (isend: no deadlock)."""
    request = dist.isend(send.contiguous(), (rank + 1) % world_size)
    dist.recv(recv, (rank - 1) % world_size)
    request.wait()


def _reduce_scatter_in_place(flat: torch.Tensor, rank: int, world_size: int) -> list[tuple[int, int]]:
    """After n - 1 steps, chunk ``rank`` of ``flat`` holds the sum over all ranks."""
    bounds = chunk_bounds(flat.numel(), world_size)
    for step in range(world_size - 1):
        s0, s1 = bounds[(rank - step - 1) % world_size]
        r0, r1 = bounds[(rank - step - 2) % world_size]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype)
        _ring_exchange(flat[s0:s1], incoming, rank, world_size)
        flat[r0:r1] += incoming
    return bounds


def _all_gather_in_place(flat: torch.Tensor, bounds: list[tuple[int, int]], rank: int, world_size: int) -> None:
    """Chunk ``rank`` of ``flat`` is final on each rank; after n - 1 steps every chunk is."""
    for step in range(world_size - 1):
        s0, s1 = bounds[(rank - step) % world_size]
        r0, r1 = bounds[(rank - step - 1) % world_size]
        incoming = torch.empty(r1 - r0, dtype=flat.dtype)
        _ring_exchange(flat[s0:s1], incoming, rank, world_size)
        flat[r0:r1] = incoming


def ring_reduce_scatter(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Sum over ranks of chunk ``rank`` of the flattened tensor (1-D)."""
    flat = tensor.detach().reshape(-1).clone()
    bounds = _reduce_scatter_in_place(flat, rank, world_size)
    start, end = bounds[rank]
    return flat[start:end].clone()


def ring_all_gather(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Every rank's tensor concatenated along dim 0, in rank order."""
    block = tensor.detach().reshape(-1)
    flat = torch.empty(block.numel() * world_size, dtype=tensor.dtype)
    bounds = chunk_bounds(flat.numel(), world_size)  # equal blocks: block b is rank b's tensor
    start, end = bounds[rank]
    flat[start:end] = block
    _all_gather_in_place(flat, bounds, rank, world_size)
    return flat.reshape(world_size * tensor.shape[0], *tensor.shape[1:]) if tensor.dim() else flat


def ring_all_reduce(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """The sum over ranks, same shape: ring reduce-scatter, then ring all-gather."""
    flat = tensor.detach().reshape(-1).clone()
    bounds = _reduce_scatter_in_place(flat, rank, world_size)
    _all_gather_in_place(flat, bounds, rank, world_size)
    return flat.reshape(tensor.shape)


def all_to_all(chunks: list[torch.Tensor], rank: int, world_size: int) -> list[torch.Tensor]:
    """``out[src]`` = the chunk rank ``src`` addressed to this rank (pairwise exchange)."""
    out: list[torch.Tensor] = [torch.empty(0)] * world_size
    out[rank] = chunks[rank].detach().clone()
    for step in range(1, world_size):
        dst, src = (rank + step) % world_size, (rank - step) % world_size
        incoming = torch.empty_like(chunks[src])
        request = dist.isend(chunks[dst].contiguous(), dst)
        dist.recv(incoming, src)
        request.wait()
        out[src] = incoming
    return out


_BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def bus_bandwidth(collective: str, size_bytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 bytes/s), nccl-tests conventions."""
    if collective not in _BUS_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; one of {sorted(_BUS_FACTORS)}")
    if seconds <= 0 or world_size < 1 or size_bytes < 0:
        raise ValueError("seconds must be > 0, world_size >= 1 and size_bytes >= 0")
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * _BUS_FACTORS[collective](world_size)
