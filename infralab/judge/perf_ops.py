"""Performance challenges in the cage (``infralab grade --gpu``): the executor's side.

The judge (:mod:`infralab.perf.caged`) drives a challenge with three requests; nothing here
decides anything, it only runs what the judge asks and sends back what the judge checks:

``{"op": "perf_prepare", "module", "workload", "shape", "dtype", "options", "seeds", "ragged", "device", "poison"}``
    generate one input set per seed (the judge's seeds, drawn at random by the judge) with the
    workload's own generator, on the device; with ``poison`` the allocator's free memory is filled
    with NaN bytes first. Answers ``{"sets": n, "problem": ...}`` (``problem``: a torch.compile'd
    object found on the loaded module).
``{"op": "perf_run", "calls", "start", "keep", "gate", "profile"}``
    run ``calls`` calls of the student's function on sets ``start, start+1, ...`` (mod n), then
    synchronise the whole device; keep the outputs of the calls listed in ``keep`` (drawn by the
    judge). ``gate``: every guard of grading (as any isolated call); else the checked timed calls
    of :mod:`infralab.perf.checked`. ``profile``: the batch runs under the CUDA profiler and the
    answer lists its kernels (the judge audits them). Answers ``{"inner_s", "tampered"}``:
    the batch's time on the cage's own timer (CUDA events, or ``time.perf_counter`` on a CPU),
    which the judge uses as a cross-check only, and the timer functions found replaced.
``{"op": "perf_fetch"}``
    the kept outputs, ``{call: outputs}``, as CPU tensors over the wire; then forgets them.

Copied into the executor's tree with :mod:`infralab.perf.checked`, ``workloads`` and
``kernel_audit``; imported by the executor before any student code, and only with ``--gpu`` (the
cage's ``gpu`` setting: its import costs every executor start about 0.1 s), so the functions bound
here (``torch.cuda.synchronize``) and the timer snapshot are the real ones.
"""
from __future__ import annotations

import importlib
import time

import torch

from infralab.perf import checked, kernel_audit, workloads

_synchronize = torch.cuda.synchronize  # bound before student code: a replaced one is not ours


class PerfOps:
    """The prepared input sets and kept outputs of the challenge the judge is running."""

    OPS = ("perf_prepare", "perf_run", "perf_fetch")

    def __init__(self, session):
        self.session = session
        self.candidates: dict[str, checked.CheckedCandidate] = {}
        self.sets: list[dict] = []
        self.kept: dict[int, tuple] = {}
        self.module = ""
        self.workload: workloads.Workload | None = None
        self.options: dict = {}
        self.device = "cpu"

    def handle(self, request: dict):
        op = request["op"]
        if op == "perf_prepare":
            value = self.prepare(request)
        elif op == "perf_run":
            value = self.run(request)
        else:
            value, self.kept = self.kept, {}
        enc = self.session.encoder(self.module)
        return {"ok": enc.encode(value)}, enc.tensors

    def _candidate(self, module: str) -> checked.CheckedCandidate:
        if module not in self.candidates:
            loaded = importlib.import_module(f"{self.session.package}.{module}")
            self.candidates[module] = checked.checked_candidate(
                loaded, triton=module in self.session.config.get("triton", ()),
                banned=self.session.banned.get(module, ()))
        return self.candidates[module]

    def _sync(self) -> None:
        if self.device == "cuda":
            _synchronize()

    def prepare(self, r: dict) -> dict:
        self.module, self.device = str(r["module"]), str(r["device"])
        self.workload = workloads.WORKLOADS[str(r["workload"])]
        self.options = dict(r.get("options") or {})
        candidate = self._candidate(self.module)
        self.sets, self.kept = [], {}
        if r.get("poison") and self.device == "cuda":
            self._sync()
            block = torch.empty(int(r.get("poison_bytes", 1 << 26)), dtype=torch.uint8, device="cuda")
            block.fill_(0xFF)  # NaN in every float dtype: outputs start from garbage, not zeros
            del block
        shape = {str(k): int(v) for k, v in dict(r["shape"]).items()}
        self.sets = [self.workload.make_inputs(shape, str(r["dtype"]), self.options, int(s), self.device,
                                               ragged=bool(r.get("ragged"))) for s in r["seeds"]]
        self._sync()
        return {"sets": len(self.sets), "problem": candidate.problem}

    def run(self, r: dict) -> dict:
        if not self.sets or self.workload is None:
            raise RuntimeError("perf_run before perf_prepare")  # kit bug, not a user message
        calls, start = int(r["calls"]), int(r["start"])
        keep = {int(k) for k in r.get("keep", [])}
        view = _GateView(self.session, self.module) if r.get("gate") else self._candidate(self.module).timed
        wl, sets, opts, kept = self.workload, self.sets, self.options, {}

        def batch() -> None:
            for i in range(calls):
                out = wl.call(view, sets[(start + i) % len(sets)], opts)
                if i in keep:
                    kept[i] = out if isinstance(out, tuple) else tuple(out) if isinstance(out, list) else (out,)

        answer: dict = {"tampered": []}
        if r.get("profile"):
            kernels, launched = kernel_audit.profile_batch(batch)
            answer["kernels"] = [[k.name[:300], k.stream, k.kind] for k in kernels][:2000]
            answer["launched"] = [str(n)[:300] for n in launched][:2000]
        else:
            answer["inner_s"] = self._inner_timed(batch)
        self.kept = {i: tuple(torch.Tensor.clone(t) if isinstance(t, torch.Tensor) else t for t in out)
                     for i, out in kept.items()}
        answer["tampered"] = checked.tampered()
        return answer

    def _inner_timed(self, batch) -> float:
        """The batch on the cage's own timer, looked up now (a replaced one shows as a disagreement)."""
        self._sync()
        if self.device == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            batch()
            end.record()
            _synchronize()
            return float(begin.elapsed_time(end)) / 1e3
        t0 = time.perf_counter()
        batch()
        return float(time.perf_counter() - t0)


class _GateView:
    """The module's functions called through every guard of grading (as any isolated call)."""

    def __init__(self, session, module: str):
        self._session, self._module = session, module

    def __getattr__(self, name: str):
        session, module = self._session, self._module
        fn = getattr(importlib.import_module(f"{session.package}.{module}"), name)
        allowed = session.mutates.get(module, {}).get(name, {})
        return lambda *args, **kwargs: session.guarded_call(fn, module, name, list(args), kwargs, allowed)
