"""Performance challenges in the cage (``infralab grade --gpu``): the executor's side.

The judge (:mod:`infralab.perf.caged`) drives a challenge with three requests; nothing here
decides anything, it only runs what the judge asks and sends back what the judge checks:

``{"op": "perf_prepare", "module", "workload", "shape", "dtype", "options", "seeds", "ragged", "device", "poison"}``
    generate one input set per seed (the judge's seeds, drawn at random by the judge) with the
    workload's own generator, on the device; with ``poison`` the allocator's free memory is filled
    with NaN bytes first. A set whose tensors match the previous set at its index (keys, shapes,
    dtypes) is written into that set's tensors: the judge refreshes the sets before every timed
    batch, and a module that caches outputs by its inputs' addresses then answers stale values.
    Answers ``{"sets": n, "problem": ...}`` (``problem``: a torch.compile'd object found on the loaded module).
``{"op": "perf_run", "calls", "start", "keep", "gate", "profile"}``
    run ``calls`` calls of the student's function on sets ``start, start+1, ...`` (mod n), then
    synchronise the whole device; keep the outputs of the calls listed in ``keep``, or of every call
    when ``keep`` is None (the timed batches: the judge names the calls it checks only after they
    ran, so nothing in the cage can know which answers matter). ``gate``: every guard of grading (as
    any isolated call); else the checked timed calls of :mod:`infralab.perf.checked`. ``profile``:
    the batch runs under the CUDA profiler and the answer lists its kernels (the judge audits them).
    Answers ``{"inner_s", "tampered"}``: the batch's time on the cage's own timer (CUDA events, or
    ``time.perf_counter`` on a CPU), which the judge uses as a cross-check only, and the timer
    functions found replaced.
``{"op": "perf_run", ..., "arm": seconds}``
    an armed batch: the calls are enqueued now, on the device, behind a wait on a pinned host flag
    (on a CPU: kept for later), and the answer ``{"armed": bool}`` comes before any of them ran, so
    that the host's enqueueing (Python, the guards, the launcher) is behind the judge's clock, as
    the bench's spin kernel hides it. A batch not released within ``arm`` seconds is released
    here (a call that waits on the device, e.g. ``.item()``, would otherwise never return); the
    ``perf_go`` answer then says so and the judge stops arming.
``{"op": "perf_run", ..., "arm": seconds, "fill": true}``
    armed behind the filling gate (:class:`infralab.perf.device_gate.DeviceGate`): no kernel of any
    stream of the cage runs until the go; the answer adds ``{"gate": {"fills", "problem"}}`` (``fills``
    false: its self-test failed and the one-block gate was used).
``{"op": "perf_run", ..., "arm": seconds, "graph": chunk}``
    an armed batch of short calls: the calls are captured once in CUDA graphs of at most ``chunk``
    calls each (their Python, the guards and checks run at the capture) and each such batch replays
    the graphs behind the wait, a few launches for thousands of calls. The graphs stay valid while
    the sets are rewritten in place; they are captured again when a set was made anew or
    ``calls``/``start``/``chunk`` change. A call a graph cannot hold answers
    ``{"armed": false, "graph_failed": reason}`` and the judge times plain armed batches.
``{"op": "perf_go"}``
    release the armed batch, synchronise the device; answers as ``perf_run`` (``inner_s``,
    ``tampered``) plus ``released_early`` and ``breakdown`` (where the release's time went, host
    seconds: reported in the record, deciding nothing). The judge's clock runs around this request only.
``{"op": "perf_fetch", "sample": {"seed", "count", "whole_up_to", "calls", "every"}}``
    the kept outputs of the calls the judge names (``calls``; all kept ones without it),
    ``{call: outputs}``, copied and sent as CPU tensors; with ``every``, each other kept call's
    outputs at ``every`` indices of their own (:func:`workloads.call_seed`): the judge checks every
    call of a timed batch. Then forgets every kept output. An output of more than ``whole_up_to``
    elements comes back as ``{"shape", "values"}``: its elements at ``count`` flat indices drawn
    from ``seed`` (:func:`workloads.sample_index`; the judge draws the seed after the calls ran and
    regenerates the indices itself).

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
        self.generation = 0  # bumped when a set is made anew (not rewritten in place): captured graphs go
        self.graph: tuple | None = None  # (generation, calls, start, chunk), the graphs, their kept outputs

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
        self.kept = {}
        if r.get("poison"):
            self.sets, self.graph = [], None
        if r.get("poison") and self.device == "cuda":
            self._sync()
            torch.cuda.empty_cache()  # the previous shape's memory back to the device first
            block = torch.empty(int(r.get("poison_bytes", 1 << 26)), dtype=torch.uint8, device="cuda")
            block.fill_(0xFF)  # NaN in every float dtype: outputs start from garbage, not zeros
            del block
        shape = {str(k): int(v) for k, v in dict(r["shape"]).items()}
        previous, self.sets, generation = self.sets, [], self.generation
        for i, seed in enumerate(r["seeds"]):
            fresh = self.workload.make_inputs(shape, str(r["dtype"]), self.options, int(seed), self.device,
                                              ragged=bool(r.get("ragged")))
            self.sets.append(workloads.refill(previous[i], fresh) if i < len(previous) else fresh)
            if self.sets[-1] is fresh:
                self.generation += 1
            del fresh
        dropped = len(previous) > len(self.sets)
        del previous
        if self.graph is not None and self.graph[0][0] != self.generation:
            self.graph = None
        if self.device == "cuda" and (generation != self.generation or dropped):
            torch.cuda.empty_cache()  # sets of another shape or size went: the judge sizes batches by free memory
        self._sync()
        return {"sets": len(self.sets), "problem": candidate.problem}

    def run(self, r: dict) -> dict:
        if not self.sets or self.workload is None:
            raise RuntimeError("perf_run before perf_prepare")  # kit bug, not a user message
        calls, start = int(r["calls"]), int(r["start"])
        keep = range(calls) if r.get("keep") is None else {int(k) for k in r["keep"]}
        self.kept = {}  # the last batch's outputs go before this one's are made
        view = _GateView(self.session, self.module) if r.get("gate") else self._candidate(self.module).timed
        wl, sets, opts, kept = self.workload, self.sets, self.options, {}

        def one(i: int) -> None:
            out = wl.call(view, sets[(start + i) % len(sets)], opts)
            if i in keep:
                kept[i] = out if isinstance(out, tuple) else tuple(out) if isinstance(out, list) else (out,)

        def batch() -> None:
            for i in range(calls):
                one(i)

        answer: dict = {"tampered": []}
        if r.get("arm") and not r.get("profile") and not r.get("gate"):
            chunk, fill = int(r.get("graph") or 0), bool(r.get("fill"))
            if chunk and self.device == "cuda":
                return self._arm_graph(one, calls, kept, (self.generation, calls, start, chunk), float(r["arm"]), fill)
            return self._arm(batch, kept, float(r["arm"]), fill)
        if r.get("profile"):
            kernels, launched = kernel_audit.profile_batch(batch)
            answer["kernels"] = [[k.name[:300], k.stream, k.kind] for k in kernels][:2000]
            answer["launched"] = [str(n)[:300] for n in launched][:2000]
            answer["autotuned"] = checked.autotuned_configs(self._candidate(self.module).files)
        else:
            answer["inner_s"] = self._inner_timed(batch)
        self.kept = kept
        answer["tampered"] = checked.tampered()
        answer["peak_bytes"] = self._peak_bytes()
        return answer

    def _arm(self, batch, kept: dict, release_s: float, fill: bool = False) -> dict:
        gate = device_gate.gate_or_none(self.device, fill=fill)  # None on a CPU: the batch runs at the go
        if self.device == "cuda":
            self._sync()
            if gate is None:  # no Triton here: the judge times unarmed batches
                return {"armed": False}
        self.armed = device_gate.Armed(gate, batch, release_s)
        self.armed_kept = kept
        return {"armed": True, **_gate_report(gate, fill)}

    def _arm_graph(self, one, calls: int, kept: dict, key: tuple, release_s: float, fill: bool = False) -> dict:
        gate = device_gate.gate_or_none(self.device, fill=fill)
        if gate is None:
            return {"armed": False}
        if self.graph is None or self.graph[0] != key:
            self.graph = None
            try:  # the calls' Python and checks run here, once
                graphs = device_gate.captured_chunks(one, calls, key[-1])
            except Exception as exc:  # noqa: BLE001 - what a graph cannot hold: plain armed batches
                self._sync()
                return {"armed": False, "graph_failed": f"{type(exc).__name__}: {str(exc)[:300]}"}
            self.graph = (key, graphs, dict(kept))
        _, graphs, graph_kept = self.graph
        self._sync()
        self.armed = device_gate.Armed(gate, lambda: [g.replay() for g in graphs], release_s)
        self.armed_kept = graph_kept  # the graphs' outputs, rewritten by every replay
        return {"armed": True, "graph": True, **_gate_report(gate, fill)}

    def go(self) -> dict:
        if self.armed is None:
            raise RuntimeError("perf_go without an armed batch")  # kit bug, not a user message
        armed, self.armed = self.armed, None
        inner_s, early, breakdown = armed.go()
        self.kept, self.armed_kept = self.armed_kept, {}  # references: copied at the fetch, after the judge's clock
        # stopped, then dropped (the fetch forgets them; nothing else may hold a batch's outputs)
        return {"inner_s": inner_s, "tampered": checked.tampered(), "released_early": early,
                "breakdown": {k: float(v) for k, v in breakdown.items()}, "peak_bytes": self._peak_bytes()}

    def _peak_bytes(self) -> int | None:
        """The most device memory this process's allocator has held (the judge records it: where memory
        went when a shape's batches did not fit)."""
        return int(torch.cuda.max_memory_reserved()) if self.device == "cuda" else None

    def fetch(self, sample: dict | None) -> dict:
        """Copies of the kept outputs of the calls the judge names, those over ``sample["whole_up_to"]``
        elements at the judge's indices; with ``sample["every"]``, every other kept call's outputs at
        that many indices of their own (:func:`workloads.call_seed`)."""
        sample = sample or {}
        named = sample.get("calls")
        every = int(sample.get("every") or 0)
        out = {}
        for call, outputs in self.kept.items():
            if named is None or call in named:
                limit, seed, count = int(sample.get("whole_up_to", -1)), sample.get("seed"), sample.get("count")
            elif every:
                limit, seed, count = every, workloads.call_seed(int(sample["seed"]), call), every
            else:
                continue
            out[call] = tuple(_copy_or_sample(t, limit, seed, count) for t in outputs)
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


def _gate_report(gate, fill: bool) -> dict:
    """What an armed answer says of the gate when the judge asked for the filling one."""
    if not fill or gate is None:
        return {}
    return {"gate": {"fills": bool(getattr(gate, "fills", False)), "problem": getattr(gate, "fill_problem", None)}}


def _copy_or_sample(t, limit: int, seed, count):
    """A copy of an output, or of ``count`` of its elements at the indices ``seed`` draws when it has
    more than ``limit`` (``limit`` < 0: always whole)."""
    if not isinstance(t, torch.Tensor):
        return t
    if 0 <= limit < t.numel():
        index = workloads.sample_index(t.numel(), int(seed), int(count)).to(t.device)
        return {"shape": list(t.shape), "values": t.reshape(-1)[index]}
    return torch.Tensor.clone(t)


class _GateView:
    """The module's functions called through every guard of grading (as any isolated call)."""

    def __init__(self, session, module: str):
        self._session, self._module = session, module

    def __getattr__(self, name: str):
        session, module = self._session, self._module
        fn = getattr(importlib.import_module(f"{session.package}.{module}"), name)
        allowed = session.mutates.get(module, {}).get(name, {})
        return lambda *args, **kwargs: session.guarded_call(fn, module, name, list(args), kwargs, allowed)
