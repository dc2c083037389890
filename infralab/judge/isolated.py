"""The isolated implementation under test: the judge's side of every call into student code.

``pytest --isolated`` makes the ``impl`` fixture of an exercise's tests return the ``load`` of that
exercise's own :class:`IsolatedTarget` (:class:`PerExerciseTarget`: one executor, time budget and
death count per exercise, so a submission's score is the sum of independent verdicts). The test,
its expected values and its assertions stay in this (the judge's) process; the student's module
is imported only inside the caged executor (:mod:`infralab.judge.cage`). Attribute access on
the returned :class:`RemoteModule` gives remote callables; calls cross as data (:mod:`wire`);
objects the student returns come back as :class:`RemoteObject` handles whose methods are
remote calls. Fail closed: a late, missing or malformed answer raises (the test fails), a hung
executor is killed and restarted, and once the time budget is spent every further call fails
at once. What the executor observed (tampering, network, reads of hidden folders, tensor
subclasses, forged objects, guards tripped) arrives on its own write-only flag channel as it
happens and is kept as flags for the record (:mod:`infralab.judge.flags`: known kinds only,
capped per kind). In-place changes to argument tensors are copied back into the test's tensors
only for the arguments course.yml's ``mutates:`` names (resolved against the stub's signature).
"""
from __future__ import annotations

import builtins
import os
import time
from pathlib import Path
from typing import Any

import torch

from infralab.errors import TargetError
from infralab.guards import may_change
from infralab.i18n import tr
from infralab.judge import wire
from infralab.judge.cage import Cage, CageLimits
from infralab.judge.config import JudgeConfig
from infralab.judge.flags import FlagLog
from infralab.judge.intake import why_ignored
from infralab.targets import TargetSpec

STARTUP_TIMEOUT_S = 60.0
IMPORT_TIMEOUT_FACTOR = 3  # a module's import (its own imports, module-level work) gets 3 calls' time
MAX_DEATHS = 3  # executor deaths after which every further call fails at once
STRIKES = 2  # timeouts of one callable after which its further calls fail at once


def _exception(error: dict, tree: str) -> BaseException:
    """A built-in exception of the same name (else RuntimeError) carrying the remote message."""
    name = str(error.get("type", "Exception"))[:80]
    message = str(error.get("message", ""))[:2000].replace(tree, "<executor>")
    cls = getattr(builtins, name, None)
    exc: BaseException
    if isinstance(cls, type) and issubclass(cls, Exception) and cls.__module__ == "builtins":
        try:
            exc = cls(message)
        except Exception:  # noqa: BLE001 - built-ins with special constructors
            exc = RuntimeError(f"{name}: {message}")
    else:
        exc = RuntimeError(f"{name}: {message}")
    exc.remote_traceback = str(error.get("traceback", ""))[:3000].replace(tree, "<executor>")  # type: ignore[attr-defined]
    exc.remote_where = str(error.get("where", ""))[:300].replace(tree + "/lib/code/", "")  # type: ignore[attr-defined]
    return exc


def _holds_cuda(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_cuda
    if isinstance(value, (tuple, list)):
        return any(_holds_cuda(v) for v in value)
    return isinstance(value, dict) and any(_holds_cuda(v) for v in value.values())


def _to_cuda(value: Any) -> Any:
    """Tensors the executor returned (they cross on the CPU) moved to the judge's GPU, in containers too."""
    if isinstance(value, torch.Tensor):
        return value.to("cuda")
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cuda(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_cuda(v) for k, v in value.items()}
    return value


class RemoteObject:
    """An object living in the executor; its methods are remote calls."""

    def __init__(self, target: "IsolatedTarget", handle: int, type_name: str, generation: int):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type_name", type_name)
        object.__setattr__(self, "_generation", generation)
        object.__setattr__(self, "_callables", {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._target._attribute(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(tr("cage.methods_only"))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target._call(self, None, args, kwargs)

    def __repr__(self) -> str:
        return f"<remote {self._type_name}>"


class RemoteModule(RemoteObject):
    """One module of the implementation under test (what ``impl(name)`` returns)."""

    def __init__(self, target: "IsolatedTarget", module_name: str, handle: int, generation: int):
        super().__init__(target, handle, module_name, generation)
        object.__setattr__(self, "_module_name", module_name)

    def __repr__(self) -> str:
        return f"<isolated implementation {self._module_name} from {self._target.origin(self._module_name)}>"


class RemoteCallable:
    def __init__(self, target: "IsolatedTarget", owner: RemoteObject, name: str):
        self._target, self._owner, self._name = target, owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target._call(self._owner, self._name, args, kwargs)

    def __repr__(self) -> str:
        return f"<remote callable {self._name}>"


class IsolatedTarget:
    """The same interface as :class:`infralab.targets.InProcessTarget`; the code runs in a cage."""

    def __init__(self, spec: TargetSpec, config: JudgeConfig, limits: CageLimits | None = None):
        self.spec = spec
        self.limits = limits or CageLimits.from_env()
        self.mutates = {k: dict(v) for k, v in config.mutates.items()}  # module -> function -> {parameter: position}
        self.flag_log = FlagLog()
        self.ignored: list[str] = []
        self.notes: list[str] = []  # how it ran, for the record's notes (not flags: nothing suspicious)
        code, self.package = self._code_tree(Path(config.course_root))
        if spec.kind == "submission":  # before anything runs: the submitted source itself
            self._scan(code, tuple(sorted(config.triton)))
        self.cage = Cage(code, self.package, config, self.limits)
        self.generation = 0
        self.greeted = False
        self.deaths = 0
        self.spent = 0.0
        self.failures: dict[str, BaseException] = {}
        self.strikes: dict[str, int] = {}
        self.modules: dict[str, RemoteModule] = {}

    def __repr__(self) -> str:  # shown in hypothesis' failing examples: no memory address (repeatable records)
        return f"<isolated {self.spec.kind}>"

    # -- the tree -----------------------------------------------------------------------------
    def _code_tree(self, root: Path) -> tuple[dict[str, Path], str]:
        spec = self.spec
        package = {"solutions": "solutions", "mutant": "target"}.get(spec.kind, "exercises")
        code: dict[str, Path] = {}
        for file in sorted(spec.base.glob("part*/*.py")):
            code[f"{package}/{file.parent.name}/{file.name}"] = file
        for file in sorted(spec.base.glob("*.py")) + sorted(spec.base.glob("part*/__init__.py")):
            code.setdefault(f"{package}/{file.relative_to(spec.base)}", file)
        for module, file in sorted(spec.overlays.items()):
            rel = module.replace(".", "/") + ".py"
            why = why_ignored(rel, Path(file)) if spec.kind == "submission" else None
            if why:
                self.ignored.append(f"{rel}: {why}")
                continue
            code[f"{package}/{rel}"] = Path(file)
        for module, file in sorted(spec.reference.items()):  # a capstone's run with the reference parts: only
            code[f"{package}/{module.replace('.', '/')}.py"] = Path(file)  # the modules it uses (infralab.uses)
        if spec.reference:
            self.notes.append(tr("uses.reference_note", modules=", ".join(sorted(spec.reference))))
        if spec.kind == "mutant":  # a mutant imports the reference it changes one function of
            for file in sorted((root / "solutions").rglob("*.py")):
                code[f"solutions/{file.relative_to(root / 'solutions')}"] = file
        return code, package

    def _scan(self, code: dict[str, Path], triton: tuple[str, ...]) -> None:
        from infralab.judge.scan import scan_files

        rels = {module: module.replace(".", "/") + ".py" for module in self.spec.overlays}
        submitted = {rel: Path(self.spec.overlays[m]) for m, rel in rels.items()
                     if f"{self.package}/{rel}" in code and m not in self.spec.reference}
        triton_files = {m.replace(".", "/") + ".py" for m in triton}
        for kind, detail in scan_files(submitted, triton_files):
            self.flag_log.add(kind, detail, "scan")

    def origin(self, module_name: str) -> str:
        rel = module_name.replace(".", "/") + ".py"
        label = {"submission": "submission", "mutant": self.spec.name}.get(self.spec.kind, self.spec.kind)
        return f"{label}:{rel}"

    # -- the wire -----------------------------------------------------------------------------
    @property
    def flags(self) -> list[dict]:
        return self.flag_log.finished()

    def _flag(self, kind: object, detail: object, from_executor: bool = False) -> None:
        self.flag_log.add(kind, str(detail).replace(str(self.cage.tree), "<executor>"), "executor", from_executor)

    def _read_flags(self, sync: object) -> None:
        """The flag channel up to the marker ``sync`` the answer names: every flag the call raised.
        A missing marker, garbage, or a channel closed by the student's code is itself a flag."""
        fd = self.cage.flags_from_executor
        if fd < 0:
            return
        deadline = time.monotonic() + 2.0
        while True:
            try:
                header, _ = wire.receive(fd, deadline, max_blob=0)
            except wire.Closed:
                self._flag("flag-channel", "closed while the executor was answering")
                break
            except wire.Timeout:  # the student's code closed its end (other holders keep the pipe open)
                self._flag("flag-channel", "closed or silenced: no end-of-call marker")
                break
            except wire.WireError as e:
                self._flag("flag-channel", f"unreadable ({e})")
                break
            if "flag" in header and type(header["flag"]) is dict:
                self._flag(header["flag"].get("kind"), header["flag"].get("detail", ""), from_executor=True)
            elif "sync" in header:
                if header["sync"] == sync:
                    return
            else:
                self._flag("flag-channel", f"a message that is no flag: keys {sorted(header)[:5]}")
                break
        os.close(fd)  # a channel that failed once is not read again; the executor's writes now fail
        self.cage.flags_from_executor = -1

    def prestart(self) -> None:
        """Start the executor now (it imports torch while pytest collects); called by the plugin."""
        if not self.cage.alive():
            self._spawn()

    def _spawn(self) -> None:
        self.cage.start()
        os.set_blocking(self.cage.to_executor, False)
        self.generation += 1
        self.modules.clear()
        self.greeted = False

    def _ensure_started(self) -> None:
        if not self.cage.alive():
            self._spawn()
        if self.greeted:
            return
        try:
            header, _ = wire.receive(self.cage.from_executor, time.monotonic() + STARTUP_TIMEOUT_S, max_blob=0)
        except wire.WireError as e:
            output, _ = self.cage.output()
            self.cage.stop()
            raise RuntimeError(tr("cage.not_started", error=e, output=output[-1500:])) from None
        if header.get("ready") is not True:
            self.cage.stop()
            raise RuntimeError(tr("cage.bad_greeting"))
        self.greeted = True

    def _request(self, what: str, header: dict, tensors: dict[str, torch.Tensor],
                 timeout_s: float | None = None) -> tuple[dict, dict]:
        if self.deaths >= MAX_DEATHS:
            raise RuntimeError(tr("cage.died_too_often", what=what, deaths=self.deaths))
        if self.spent >= self.limits.budget_s:
            raise TimeoutError(tr("cage.budget_spent", what=what, budget=self.limits.budget_s))
        self._ensure_started()  # the executor's own start-up is not the student's time
        t0 = time.monotonic()
        try:
            timeout_s = timeout_s or self.limits.call_timeout_s
            deadline = time.monotonic() + min(timeout_s, self.limits.budget_s - self.spent)
            try:
                wire.send(self.cage.to_executor, header, tensors, deadline=deadline)
                answer, out = wire.receive(self.cage.from_executor, deadline)
            except wire.Timeout:
                self.cage.stop()
                self._flag("timeout", tr("cage.ran_out_of_time", what=what))
                raise TimeoutError(tr("cage.call_timeout", what=what, timeout=timeout_s)) from None
            except wire.Closed:
                oom_before = self.cage.oom_kills
                self.cage.stop()
                self.deaths += 1
                self._flag("executor-died", tr("cage.died_at_memory_limit", what=what, limit=self.cage.tree_memory_bytes)
                           if self.cage.oom_kills > oom_before else tr("cage.during", what=what))
                raise RuntimeError(tr("cage.died_in_call", what=what)) from None
            except wire.WireError as e:
                self.cage.stop()
                raise RuntimeError(tr("cage.malformed_answer", what=what, error=e)) from None
        finally:
            self.spent += time.monotonic() - t0
        self._read_flags(answer.get("sync"))
        return answer, out

    def ask(self, what: str, header: dict, slow: bool = False) -> Any:
        """One request of the judge's own protocol (a performance challenge: infralab.perf.caged), its
        answer decoded; an error in the executor raises here. ``slow``: a call that may compile."""
        answer, out = self._request(what, header, {}, timeout_s=IMPORT_TIMEOUT_FACTOR * self.limits.call_timeout_s
                                    if slow else None)
        return self._answer(answer, out, self.generation)

    def _encode_args(self, args: tuple, kwargs: dict) -> tuple[Any, Any, dict]:
        def refuse(obj: Any) -> Any:
            if isinstance(obj, RemoteObject):
                if obj._generation != self.generation:
                    raise RuntimeError(tr("cage.lost_on_restart"))
                return {"$h": obj._handle}
            raise TypeError(tr("cage.cannot_pass", type=type(obj).__name__))
        enc = wire.Encoder(refuse)
        return enc.encode(list(args)), enc.encode(dict(kwargs)), enc.tensors

    def _decode(self, data: Any, tensors: dict, generation: int) -> Any:
        def on_handle(d: dict) -> RemoteObject:
            if "$callable" in d:
                raise wire.WireError(tr("cage.callable_marker"))
            return RemoteObject(self, d["$h"], str(d.get("type", "object"))[:80], generation)
        return wire.decode(data, tensors, on_handle)

    def _answer(self, answer: dict, out: dict, generation: int) -> Any:
        if "error" in answer and type(answer["error"]) is dict:
            raise _exception(answer["error"], str(self.cage.tree))
        if "ok" not in answer:
            raise RuntimeError(tr("cage.no_result"))
        return self._decode(answer["ok"], out, generation)

    # -- what tests use -------------------------------------------------------------------------
    def load(self, module_name: str) -> RemoteModule:
        if module_name in self.failures:
            raise self.failures[module_name]
        if module_name in self.modules and self.modules[module_name]._generation == self.generation \
                and self.cage.alive():
            return self.modules[module_name]
        origin = self.origin(module_name)
        if not (self.cage.lib / "code" / self.package / (module_name.replace(".", "/") + ".py")).is_file():
            self.failures[module_name] = TargetError(tr("targets.module_missing", origin=origin))
            raise self.failures[module_name]
        try:
            answer, out = self._request(tr("cage.importing", origin=origin),
                                        {"op": "import", "module": module_name}, {},
                                        timeout_s=IMPORT_TIMEOUT_FACTOR * self.limits.call_timeout_s)
            if "error" in answer:
                raise _exception(answer["error"], str(self.cage.tree))
            handle = answer.get("ok")
            if type(handle) is not dict or type(handle.get("$h")) is not int:
                raise RuntimeError(tr("cage.no_module_handle"))
        except TimeoutError as exc:
            error = TargetError(tr("targets.does_not_import", origin=origin, error=exc))
            self.failures[module_name] = error
            raise error from None
        except Exception as exc:  # noqa: BLE001 - any failure to import is the submission's
            where = getattr(exc, "remote_traceback", "")
            error = TargetError(tr("targets.does_not_import", origin=origin,
                                  error=f"{type(exc).__name__}: {exc}" + (f"\n{where}" if where else "")))
            self.failures[module_name] = error
            raise error from None
        module = RemoteModule(self, module_name, handle["$h"], self.generation)
        self.modules[module_name] = module
        return module

    def _live(self, obj: RemoteObject) -> RemoteObject:
        """``obj`` in the running executor: modules are imported again after a restart."""
        if obj._generation == self.generation and self.cage.alive():
            return obj
        if isinstance(obj, RemoteModule):
            return self.load(obj._module_name)
        raise RuntimeError(tr("cage.lost_on_stop", type=obj._type_name))

    def _attribute(self, obj: RemoteObject, name: str) -> Any:
        if name in obj._callables:
            return obj._callables[name]
        live = self._live(obj)
        answer, out = self._request(f"{obj._type_name}.{name}", {"op": "getattr", "h": live._handle, "name": name}, {})
        if "error" in answer and type(answer["error"]) is dict and answer["error"].get("type") == "AttributeError":
            if isinstance(obj, RemoteModule):
                raise TargetError(tr("targets.missing_name", origin=self.origin(obj._module_name), name=name))
            raise AttributeError(tr("cage.no_attribute", type=obj._type_name, name=name))
        if type(answer.get("ok")) is dict and "$callable" in answer["ok"]:
            fn = RemoteCallable(self, obj, name)
            obj._callables[name] = fn
            return fn
        if not isinstance(obj, RemoteModule) and "error" not in answer:
            raise TypeError(tr("cage.not_a_method", type=obj._type_name, name=name))
        return self._answer(answer, out, live._generation)

    def _call(self, obj: RemoteObject, name: str | None, args: tuple, kwargs: dict) -> Any:
        key = f"{obj._type_name}.{name}"
        if self.strikes.get(key, 0) >= STRIKES:
            raise TimeoutError(tr("cage.strikes", what=key, strikes=STRIKES))
        live = self._live(obj)
        a, k, tensors = self._encode_args(args, kwargs)
        try:
            answer, out = self._request(key, {"op": "call", "h": live._handle, "name": name, "args": a, "kwargs": k},
                                        tensors)
        except TimeoutError:
            self.strikes[key] = self.strikes.get(key, 0) + 1
            raise
        self._write_back(answer, out, args, kwargs, self._may_change(obj, name))
        result = self._answer(answer, out, live._generation)
        if self.limits.gpu and _holds_cuda((args, kwargs)):  # grade --gpu: back where the test's tensors are
            result = _to_cuda(result)
        return result

    def _may_change(self, obj: RemoteObject, name: str | None) -> dict[str, int]:
        """{parameter: position} of the inputs this call's spec lets it change (course.yml ``mutates:``)."""
        if isinstance(obj, RemoteModule):
            return self.mutates.get(obj._module_name, {}).get(name or "", {})
        key = f"{obj._type_name}.{name}"
        return {p: i for rules in self.mutates.values() for p, i in rules.get(key, {}).items()}

    def run_ranks(self, module: str, calls: list, world_size: int, backend: str, allow_collectives: bool,
                  timeout_s: float) -> list:
        """Multi-rank exercises (:mod:`infralab.distributed`): every rank runs inside the executor,
        on the simulated group (the cage has no network for a gloo group, whatever ``backend``
        asks); per-rank values and traffic come back as data."""
        from infralab.distributed import RankResult

        self.load(module)  # an import failure is the submission's, reported as for any module
        encoded, _, tensors = self._encode_args(([[name, [list(a) for a in args]] for name, args in calls],), {})
        header = {"op": "run_ranks", "module": module, "calls": encoded, "world_size": int(world_size),
                  "allow_collectives": bool(allow_collectives), "timeout_s": float(timeout_s)}
        answer, out = self._request(tr("cage.on_ranks", module=module, world_size=world_size), header, tensors,
                                    timeout_s=float(timeout_s) * max(1, len(calls)) + 10)
        if backend != "sim":
            note = tr("intake.simulated_group", module=module, backend=backend)
            if note not in self.notes:
                self.notes.append(note)
        results = self._answer(answer, out, self.generation)
        return [[RankResult(value=r["value"], sends=[tuple(x) for x in r["sends"]],
                            recvs=[tuple(x) for x in r["recvs"]], collectives=list(r["collectives"]),
                            ops=[(str(k), int(b)) for k, b in r.get("ops", [])])
                 for r in call] for call in results]

    def _write_back(self, answer: dict, out: dict, args: tuple, kwargs: dict, allowed: dict[str, int]) -> None:
        """In-place writes to the argument tensors the spec lets the call change (``allowed``, the
        judge's own reading of course.yml: whatever else the executor sends is ignored)."""
        changed = answer.get("writeback")
        if type(changed) is not dict:
            return
        for path, ref in changed.items():
            try:
                slot: int | str = int(path[1:]) if path.startswith("a") else path[1:]
                if not path.startswith(("a", "k")) or not may_change(slot, allowed):
                    continue
                new = wire.decode(ref, out, lambda d: None)
                orig = args[slot] if isinstance(slot, int) else kwargs[slot]
            except (wire.WireError, ValueError, IndexError, KeyError, TypeError):
                continue
            if isinstance(orig, torch.Tensor) and isinstance(new, torch.Tensor) \
                    and new.shape == orig.shape and new.dtype == orig.dtype:
                with torch.no_grad():
                    orig.copy_(new)

    def stop(self) -> None:
        """Stop the executor (a later call starts a fresh one); its flags stay."""
        self.cage.stop()

    def close(self) -> None:
        self.cage.close()
        if self.cage.overflowed:
            self._flag("output", f"printed more than the {self.limits.output_cap_bytes} bytes kept; the rest was dropped")

    def protections(self) -> dict:
        report = self.cage.protections()
        report["ignored_files"] = list(self.ignored)
        report["notes"] = list(self.notes)
        return report


class PerExerciseTarget:
    """An implementation under test graded exercise by exercise: each exercise gets an
    :class:`IsolatedTarget` of its own (a fresh executor, its own time budget, death count and
    strikes), so one exercise's crash, exhausted file descriptors, spinning threads or spent
    budget cannot cost another exercise its points. The executor of the exercise graded before
    is stopped when the next one starts (its processes, threads and memory go with it); the
    next exercise's executor starts while the one before is being graded (:meth:`plan`)."""

    def __init__(self, spec: TargetSpec, config: JudgeConfig, limits: CageLimits | None = None):
        self.spec, self.config = spec, config
        self.limits = limits or CageLimits.from_env()
        self.lanes: dict[str, IsolatedTarget] = {}
        self.order: list[str] = []
        self.current: str | None = None

    def __repr__(self) -> str:
        return f"<isolated {self.spec.kind}, per exercise>"

    def _lane(self, exercise: str) -> IsolatedTarget:
        if exercise not in self.lanes:
            self.lanes[exercise] = IsolatedTarget(self.spec, self.config, self.limits)
        return self.lanes[exercise]

    def plan(self, exercises: list[str]) -> None:
        """The exercises in the order their tests run: the first one's executor starts now (while
        pytest collects), each next one's while the exercise before it is graded."""
        self.order = list(dict.fromkeys(exercises))
        if self.order:
            self._lane(self.order[0]).prestart()

    def loader(self, exercise: str):
        """``impl`` for the tests of ``exercise`` (``""``: tests outside the course's exercises)."""
        if exercise != self.current:
            for name, lane in self.lanes.items():
                if name != exercise:
                    lane.stop()
            self.current = exercise
            if exercise in self.order[:-1]:
                self._lane(self.order[self.order.index(exercise) + 1]).prestart()
        return self._lane(exercise).load

    @property
    def flags(self) -> list[dict]:
        return [f for lane in self.lanes.values() for f in lane.flags]

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()

    def protections(self) -> dict:
        report = next(iter(self.lanes.values())).protections() if self.lanes else {"mode": "isolated", "isolated": True}
        report["executors"] = tr("cage.executors_per_exercise")
        report["ignored_files"] = sorted({f for lane in self.lanes.values() for f in lane.ignored})
        return report


def protections_report(targets: Any) -> dict:
    """The protections that were active, for the record (the same for every isolated target)."""
    reports = [t.protections() for t in targets if isinstance(t, (IsolatedTarget, PerExerciseTarget))]
    if not reports:
        return {"mode": "isolated", "isolated": True, "note": "no implementation was loaded"}
    report = reports[0]
    report["ignored_files"] = sorted({f for r in reports for f in r.get("ignored_files", [])})
    report["notes"] = sorted({n for r in reports for n in r.get("notes", [])})
    return report


def judge_flags(targets: Any) -> list[dict]:
    """The executor's observations for the record, in the order they were made."""
    flags: list[dict] = []
    for t in targets:
        for f in getattr(t, "flags", []):
            if f not in flags:
                flags.append(f)
    return flags
