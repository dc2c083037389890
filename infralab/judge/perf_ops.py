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
``{"op": "perf_run", ..., "arm": seconds}``
    an armed batch: the calls are enqueued now, on the device, behind a wait on a pinned host flag
    (on a CPU: kept for later), and the answer ``{"armed": bool}`` comes before any of them ran, so
    that the host's enqueueing (Python, the guards, the launcher) is behind the judge's clock, as
    the bench's spin kernel hides it. A batch not released within ``arm`` seconds is released
    here (a call that waits on the device, e.g. ``.item()``, would otherwise never return); the
    ``perf_go`` answer then says so and the judge stops arming.
``{"op": "perf_go"}``
    release the armed batch, synchronise the device; answers as ``perf_run`` (``inner_s``,
    ``tampered``) plus ``released_early`` and ``breakdown`` (where the release's time went, host
    seconds: reported in the record, deciding nothing). The judge's clock runs around this request only.
``{"op": "perf_fetch", "sample": {"seed", "count", "whole_up_to"}}``
    the kept outputs, ``{call: outputs}``, as CPU tensors over the wire; then forgets them. An
    output of more than ``whole_up_to`` elements comes back as ``{"shape", "values"}``: its
    elements at ``count`` flat indices drawn from ``seed`` (:func:`workloads.sample_index`; the
    judge draws the seed after the calls ran and regenerates the indices itself).

Copied into the executor's tree with :mod:`infralab.perf.checked`, ``workloads``, ``kernel_audit``
and ``device_gate`` (the armed batches: :class:`infralab.perf.device_gate.Armed`); imported by the executor before any student code, and only with ``--gpu`` (the
cage's ``gpu`` setting: its import costs every executor start about 0.1 s), so the functions bound
here (``torch.cuda.synchronize``) and the timer snapshot are the real ones.
"""
from __future__ import annotations

import importlib
import time

import torch

from infralab.perf import checked, device_gate, kernel_audit, workloads

_synchronize = device_gate._synchronize  # bound before student code: a replaced one is not ours


class PerfOps:
    """The prepared input sets and kept outputs of the challenge the judge is running."""

    OPS = ("perf_prepare", "perf_run", "perf_go", "perf_fetch")

    def __init__(self, session):
        self.session = session
        self.candidates: dict[str, checked.CheckedCandidate] = {}
        self.sets: list[dict] = []
        self.kept: dict[int, tuple] = {}
        self.module = ""
        self.workload: workloads.Workload | None = None
        self.options: dict = {}
        self.device = "cpu"
        self.armed: device_gate.Armed | None = None

    def handle(self, request: dict):
        op = request["op"]
        if op == "perf_prepare":
            value = self.prepare(request)
        elif op == "perf_run":
            value = self.run(request)
        elif op == "perf_go":
            value = self.go()
        else:
            value, self.kept = self.fetch(request.get("sample")), {}
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
        if r.get("arm") and not r.get("profile") and not r.get("gate"):
            return self._arm(batch, kept, float(r["arm"]))
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

    def _arm(self, batch, kept: dict, release_s: float) -> dict:
        gate = device_gate.gate_or_none(self.device)  # None on a CPU: the batch runs at the go
        if self.device == "cuda":
            self._sync()
            if gate is None:  # no Triton here: the judge times unarmed batches
                return {"armed": False}
        self.armed = device_gate.Armed(gate, batch, release_s)
        self.armed_kept = kept
        return {"armed": True}

    def go(self) -> dict:
        if self.armed is None:
            raise RuntimeError("perf_go without an armed batch")  # kit bug, not a user message
        armed, self.armed = self.armed, None
        inner_s, early, breakdown = armed.go()
        t0 = time.perf_counter()
        self.kept = {i: tuple(torch.Tensor.clone(t) if isinstance(t, torch.Tensor) else t for t in out)
                     for i, out in self.armed_kept.items()}
        breakdown["keep_s"] = time.perf_counter() - t0
        return {"inner_s": inner_s, "tampered": checked.tampered(), "released_early": early,
                "breakdown": {k: float(v) for k, v in breakdown.items()}}

    def fetch(self, sample: dict | None) -> dict:
        """The kept outputs; those over ``sample["whole_up_to"]`` elements at the judge's indices."""
        if not sample:
            return self.kept
        limit, out = int(sample["whole_up_to"]), {}
        for call, outputs in self.kept.items():
            out[call] = tuple(
                {"shape": list(t.shape), "values": t.reshape(-1)[workloads.sample_index(
                    t.numel(), int(sample["seed"]), int(sample["count"])).to(t.device)]}
                if isinstance(t, torch.Tensor) and t.numel() > limit else t for t in outputs)
        return out

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
