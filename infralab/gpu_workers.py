"""The GPUs of ``infralab grade --gpu``: which devices there are, one per worker at a time.

Each local worker grading a submission holds one device id while it grades; its pytest run (the
judge) and every executor it starts see only that GPU (``CUDA_VISIBLE_DEVICES=<id>``), so two
submissions are never timed on the same card at once. On Ray each task asks for one GPU and Ray
sets ``CUDA_VISIBLE_DEVICES`` itself.
"""
from __future__ import annotations

import contextlib
import os
import queue
from collections.abc import Iterator, Mapping
from typing import Any

from infralab.errors import InfralabError
from infralab.i18n import tr


def gpu_devices(cuda: Any = None, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The device ids grading may use: ``CUDA_VISIBLE_DEVICES`` when it is set, else ``0..count-1``.
    ``cuda``: ``torch.cuda`` (a fake in the kit's tests). No CUDA GPU: one clear InfralabError line."""
    if cuda is None:
        try:
            import torch
        except ImportError as e:
            raise InfralabError(tr("gpugrade.no_cuda", reason=f"torch does not import: {e}")) from None
        cuda = torch.cuda
    if not cuda.is_available():
        raise InfralabError(tr("gpugrade.no_cuda", reason="torch.cuda.is_available() is False"))
    given = environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        ids = [d.strip() for d in given.split(",") if d.strip()]
        if not ids:
            raise InfralabError(tr("gpugrade.bad_devices", value=given))
        return ids
    return [str(i) for i in range(cuda.device_count())]


class DeviceLease:
    """Device ids handed to workers one at a time: ``with lease() as device: ...``."""

    def __init__(self, devices: list[str]):
        self.free: queue.Queue[str] = queue.Queue()
        for d in devices:
            self.free.put(d)

    @contextlib.contextmanager
    def __call__(self) -> Iterator[str]:
        device = self.free.get()
        try:
            yield device
        finally:
            self.free.put(device)
