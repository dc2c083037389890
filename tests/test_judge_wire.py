"""The judge's wire format: data round-trips; what the executor sends can only ever be data."""
from __future__ import annotations

import json
import os
import struct

import pytest
import torch

from infralab.judge import wire


def _roundtrip(value, on_object=None):
    r, w = os.pipe()
    try:
        enc = wire.Encoder(on_object or (lambda obj: (_ for _ in ()).throw(TypeError(type(obj).__name__))))
        wire.send(w, {"v": enc.encode(value)}, enc.tensors)
        header, tensors = wire.receive(r)
        return wire.decode(header["v"], tensors, lambda d: ("handle", d["$h"]))
    finally:
        os.close(r)
        os.close(w)


def test_data_round_trips(gen):
    x = torch.randn(3, 4, generator=gen).to(torch.bfloat16)
    value = {"x": x, "t": x.t(), "nested": [1, 2.5, float("nan"), None, "s", True, (torch.float16, torch.Size([2, 3]))],
             "empty": torch.zeros(0, 5), "scalar": torch.tensor(7)}
    back = _roundtrip(value)
    assert torch.equal(back["x"], x) and back["x"].dtype == torch.bfloat16
    assert torch.equal(back["t"], x.t()), "non-contiguous tensors arrive with their values"
    assert back["nested"][:2] == [1, 2.5] and back["nested"][2] != back["nested"][2]
    assert back["nested"][3:6] == [None, "s", True]
    assert back["nested"][6] == (torch.float16, (2, 3))
    assert back["empty"].shape == (0, 5) and back["scalar"].item() == 7


def test_tensor_subclasses_arrive_as_plain_tensors_of_their_raw_data():
    class Liar(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in ("clone", "contiguous", "cpu", "detach"):
                return torch.ones(3)  # lies about its data when copied
            return super().__torch_function__(func, types, args, kwargs or {})

    sent = torch.zeros(3).as_subclass(Liar)
    back = _roundtrip(sent)
    assert type(back) is torch.Tensor
    assert torch.equal(back, torch.zeros(3)), "the raw data, not what the subclass claims"


def test_objects_become_handles_and_unknown_markers_are_refused():
    back = _roundtrip({"obj": object()}, on_object=lambda obj: {"$h": 5, "type": "object"})
    assert back["obj"] == ("handle", 5)
    for bad in ({"$t": "t9"}, {"$dtype": "not_a_dtype"}, {"$dtype": "Tensor"}, {"__reduce__": 1}, {"$dict": [[[], 1]]}):
        with pytest.raises(wire.WireError):
            wire.decode(bad, {}, lambda d: None)


def test_receive_rejects_oversized_and_malformed_frames():
    r, w = os.pipe()
    try:
        os.write(w, struct.pack("<QQ", wire.MAX_HEADER + 1, 0))
        with pytest.raises(wire.WireError, match="too large"):
            wire.receive(r)
        head = b"[1, 2]"
        os.write(w, struct.pack("<QQ", len(head), 0) + head)
        with pytest.raises(wire.WireError, match="not an object"):
            wire.receive(r)
        head = json.dumps({"ok": {"$t": "t0"}}).encode()
        os.write(w, struct.pack("<QQ", len(head), 4) + head + b"\x80\x04K\x01")  # pickle bytes as "tensors"
        with pytest.raises(wire.WireError, match="malformed tensor data"):
            wire.receive(r)
    finally:
        os.close(r)
        os.close(w)


def test_a_silent_peer_times_out():
    r, w = os.pipe()
    try:
        import time
        with pytest.raises(wire.Timeout):
            wire.receive(r, deadline=time.monotonic() + 0.2)
    finally:
        os.close(r)
        os.close(w)
