"""The wire between the judge and the executor: framed messages of JSON plus safetensors bytes.

A message is ``<header length: u64><blob length: u64><header JSON><blob>``. The header is JSON
(never pickle); tensors travel in the blob as one safetensors file and are referenced from the
JSON by key. Values are encoded as:

- ``None``, bool, int, float (NaN/Inf allowed), str: themselves;
- a list: a JSON list; a tuple (and ``torch.Size``): ``{"$tuple": [...]}``;
- a dict: ``{"$dict": [[key, value], ...]}`` (keys: str, int, bool, None);
- a tensor: ``{"$t": "t3"}`` (key into the blob), ``{"$t": "t3", "d": "cuda"}`` for one that lived
  on the GPU (it crosses on the CPU; ``infralab grade --gpu`` moves it back); ``torch.dtype``: ``{"$dtype": "float32"}``;
  ``torch.device``: ``{"$device": "cpu"}``;
- anything else: whatever the caller's ``on_object`` returns (the executor keeps the object and
  sends a handle ``{"$h": 7, "type": "BlockAllocator"}``); the judge refuses non-data arguments.

This module is copied into the executor's tree and imported there on its own: it depends on
the standard library, torch and safetensors only. So its errors stay English (marked as kit
bugs): a correct judge and executor never send a malformed frame, and the judge reports a broken
channel in its own catalogued words (``cage.malformed_answer``, ``cage.call_timeout``, ...).
"""
from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any

import torch

_FRAME = struct.Struct("<QQ")
MAX_HEADER = 16 << 20
MAX_BLOB = 1 << 30
MAX_DEPTH = 64
_SCALARS = (type(None), bool, int, float, str)


class WireError(Exception):
    """A malformed, oversized, late or missing message."""


class Timeout(WireError):
    """No complete message within the time allowed."""


class Closed(WireError):
    """The other side closed its end (it exited or was killed)."""


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name), None)
    if not isinstance(dtype, torch.dtype):
        raise WireError(f"unknown dtype {name!r}")  # kit bug, not a user message
    return dtype


def plain_tensor(t: torch.Tensor) -> torch.Tensor:
    """A plain, contiguous CPU copy of ``t``'s data, without running any subclass's overrides."""
    with torch._C.DisableTorchFunction():
        plain = torch.Tensor.as_subclass(t, torch.Tensor)
        return torch.Tensor.clone(torch.Tensor.contiguous(torch.Tensor.cpu(torch.Tensor.detach(plain))))


class Encoder:
    """Turns a value into JSON-able data plus a dict of tensors."""

    def __init__(self, on_object: Callable[[Any], Any]):
        self.tensors: dict[str, torch.Tensor] = {}
        self.on_object = on_object

    def tensor(self, t: torch.Tensor) -> dict:
        key = f"t{len(self.tensors)}"
        self.tensors[key] = plain_tensor(t)
        if torch._C.TensorBase.is_cuda.__get__(t):  # it crosses on the CPU; "d" says where it lived
            return {"$t": key, "d": "cuda"}
        return {"$t": key}

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError("value nested too deeply")  # kit bug, not a user message
        kind = type(value)
        if kind in _SCALARS:
            return value
        if isinstance(value, torch.Tensor):
            return self.on_tensor(value)
        if kind is torch.dtype:
            return {"$dtype": _dtype_name(value)}
        if kind is torch.device:
            return {"$device": str(value)}
        if kind is list:
            return [self.encode(v, depth + 1) for v in value]
        if kind in (tuple, torch.Size):
            return {"$tuple": [self.encode(v, depth + 1) for v in value]}
        if kind is dict and all(type(k) in _SCALARS for k in value):
            return {"$dict": [[k, self.encode(v, depth + 1)] for k, v in value.items()]}
        return self.on_object(value)

    def on_tensor(self, t: torch.Tensor) -> dict:
        return self.tensor(t)


def decode(data: Any, tensors: dict[str, torch.Tensor], on_handle: Callable[[dict], Any], depth: int = 0,
           place: Callable[[torch.Tensor, bool], torch.Tensor] | None = None) -> Any:
    """The inverse of :class:`Encoder` for data built by the other side (validated as it goes).
    ``place(tensor, was_on_cuda)``: where a decoded tensor goes (the GPU executor moves them there)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")  # kit bug, not a user message
    if type(data) in _SCALARS:
        return data
    if type(data) is list:
        return [decode(v, tensors, on_handle, depth + 1, place) for v in data]
    if type(data) is not dict or len(data) < 1:
        raise WireError(f"malformed value of type {type(data).__name__}")  # kit bug, not a user message
    if "$t" in data:
        if data["$t"] not in tensors:
            raise WireError(f"reference to a missing tensor {data['$t']!r}")  # kit bug, not a user message
        t = tensors[data["$t"]]
        return t if place is None else place(t, data.get("d") == "cuda")
    if "$tuple" in data and type(data["$tuple"]) is list:
        return tuple(decode(v, tensors, on_handle, depth + 1, place) for v in data["$tuple"])
    if "$dict" in data and type(data["$dict"]) is list:
        out = {}
        for pair in data["$dict"]:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) not in _SCALARS:
                raise WireError("malformed dict entry")  # kit bug, not a user message
            out[pair[0]] = decode(pair[1], tensors, on_handle, depth + 1, place)
        return out
    if "$dtype" in data:
        return dtype_from_name(data["$dtype"])
    if "$device" in data and type(data["$device"]) is str:
        return torch.device(data["$device"])
    if "$h" in data and type(data["$h"]) is int:
        return on_handle(data)
    raise WireError(f"malformed value with keys {sorted(data)[:5]}")  # kit bug, not a user message


def _save(tensors: dict[str, torch.Tensor]) -> bytes:
    if not tensors:
        return b""
    from safetensors.torch import save
    return save(tensors)


def _load(blob: bytes) -> dict[str, torch.Tensor]:
    if not blob:
        return {}
    from safetensors.torch import load
    try:
        return load(blob)
    except Exception as e:  # noqa: BLE001 - any parse failure is a malformed message
        raise WireError(f"malformed tensor data: {type(e).__name__}: {e}") from None  # kit bug, not a user message


def send(fd: int, header: dict, tensors: dict[str, torch.Tensor] | None = None,
         deadline: float | None = None) -> None:
    """Write one message; with a deadline, ``fd`` should be non-blocking (the judge's side)."""
    head = json.dumps(header, allow_nan=True, separators=(",", ":")).encode("utf-8")
    blob = _save(tensors or {})
    data = memoryview(_FRAME.pack(len(head), len(blob)) + head + blob)
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise Timeout("the other side stopped reading") from None  # kit bug, not a user message
            select.select([], [fd], [], wait)
            continue
        except (BrokenPipeError, ConnectionResetError):
            raise Closed("the other side closed the connection") from None  # kit bug, not a user message
        data = data[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise Timeout("no answer in time")  # kit bug, not a user message
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise Timeout("no answer in time")  # kit bug, not a user message
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise Closed("the other side closed the connection")  # kit bug, not a user message
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, deadline: float | None = None, max_blob: int = MAX_BLOB) -> tuple[dict, dict[str, torch.Tensor]]:
    """One message: (header dict, tensors). Raises Timeout, Closed or WireError."""
    head_len, blob_len = _FRAME.unpack(_read_exact(fd, _FRAME.size, deadline))
    if head_len > MAX_HEADER or blob_len > max_blob:
        raise WireError(f"message too large ({head_len} + {blob_len} bytes)")  # kit bug, not a user message
    head = _read_exact(fd, head_len, deadline)
    blob = _read_exact(fd, blob_len, deadline)
    try:
        header = json.loads(head.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise WireError(f"malformed header: {e}") from None  # kit bug, not a user message
    if type(header) is not dict:
        raise WireError("malformed header: not an object")  # kit bug, not a user message
    return header, _load(blob)
