"""Values crossing between processes as data only: tensors as safetensors bytes, the rest as JSON
(never pickled from a rank, whose code may be a student's)."""
from __future__ import annotations

import json
import struct
from typing import Any

import torch

from infralab.i18n import tr


def encode(obj: Any) -> bytes:
    """Data (tensors, numbers, strings, None, dtypes, lists/tuples/dicts of those) as bytes."""
    from safetensors.torch import save

    tensors: dict[str, torch.Tensor] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            key = str(len(tensors))
            tensors[key] = x.detach().cpu().contiguous().clone()
            return {"__tensor__": key}
        if isinstance(x, torch.dtype):
            return {"__dtype__": str(x).removeprefix("torch.")}
        if isinstance(x, tuple):
            return {"__tuple__": [walk(v) for v in x]}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            if not all(isinstance(k, str) for k in x):
                raise TypeError(tr("distributed.codec_dict_keys"))
            return {"__dict__": {k: walk(v) for k, v in x.items()}}
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(tr("distributed.codec_not_data", type=type(x).__name__))

    head = json.dumps(walk(obj)).encode()
    return struct.pack("<Q", len(head)) + head + save(tensors)


def decode(data: bytes) -> Any:
    from safetensors.torch import load

    (size,) = struct.unpack("<Q", data[:8])
    head = json.loads(data[8:8 + size])
    tensors = load(data[8 + size:])

    def walk(x: Any) -> Any:
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            if "__tensor__" in x:
                return tensors[x["__tensor__"]]
            if "__dtype__" in x:
                return getattr(torch, x["__dtype__"])
            if "__tuple__" in x:
                return tuple(walk(v) for v in x["__tuple__"])
            return {k: walk(v) for k, v in x["__dict__"].items()}
        return x

    return walk(head)
