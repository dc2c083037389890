"""The executor: runs inside the cage, imports the student's modules and answers the judge.

Started by boot.py (as an unprivileged user, in its own namespaces) as
``python -I -B executor.py CONFIG.json REQUESTS_FD ANSWERS_FD FLAGS_FD``; talks to the judge over
those pipe ends. Its stdout and stderr go to a capped pipe the judge drains. Requests::

    {"op": "import", "module": "part01_transformer.rmsnorm"}      -> handle of the module
    {"op": "getattr", "h": 1, "name": "rms_norm"}               -> {"$callable": ...} or a value
    {"op": "call", "h": 1, "name": "rms_norm", "args": [...], "kwargs": {...}}
    {"op": "perf_prepare" | "perf_run" | "perf_fetch", ...}   -> a performance challenge (perf_ops.py,
                                                                loaded only with grade --gpu)

Answers: ``{"ok": value, "writeback": {...}, "sync": n}`` or ``{"error": {"type", "message",
"traceback"}, "sync": n}``. Flags (audit events, tampering with torch, guards tripped) leave the
moment they happen, one framed message each on the write-only FLAGS_FD, so nothing the student's
code does later can take them back; before each answer the executor sends ``{"sync": n}`` there,
and the judge reads the channel up to it (a missing marker, garbage or a closed channel is a flag
itself). Flags never decide a verdict; the guards (infralab.guards) do, by failing the call.
This file is copied into the executor's tree next to wire.py, with a mini ``infralab`` package
(the guards, the simulated group; see cage.py) that it imports from.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback


_own: list[str] = [sys.prefix + "/", sys.base_prefix + "/"]  # its own tree and Python: not suspicious


def _triton_tools() -> tuple[str, ...]:
    """Where Triton keeps the assembler it runs when it compiles a kernel (``ptxas``; found without
    importing Triton, before any student code): starting those is Triton's compile, not the student's."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return ()
    return tuple(os.path.realpath(p) + "/backends/" for p in (spec.submodule_search_locations or []) if spec)


_TOOLS = _triton_tools()
_QUIET_WRITES = ("/dev/null",)  # writes that cannot carry anything out
CAP_PER_KIND = 20  # the judge keeps as many (and counts the rest); a full pipe must not block the executor


def _flag_sender(fd: int, send):
    """``flag(kind, detail)``: one message on the flag channel, now (a closure: no module global to swap)."""
    seen: set[tuple[str, str]] = set()
    counts: dict[str, int] = {}

    def flag(kind: str, detail: str) -> None:
        if (kind, detail) in seen or counts.get(kind, 0) >= CAP_PER_KIND:
            return
        seen.add((kind, detail))
        counts[kind] = counts.get(kind, 0) + 1
        try:
            send(fd, {"flag": {"kind": kind, "detail": detail[:300]}})
        except Exception:  # noqa: BLE001 - a closed channel is noticed by the judge
            pass

    return flag


def flag(kind: str, detail: str) -> None:  # replaced in main() by the channel's sender
    raise RuntimeError("the flag channel is not open")  # kit bug, not a user message


_WATCHED_PATHS = ("/graders/", "/solutions/", "/fixtures/", "/.git/", "/proc/1/", "infralab-run", "/etc/shadow")
_HARNESS = ("pytest", "_pytest", "infralab", "hypothesis", "solutions", "graders")


def _triton_tool(event: str, args: tuple, tools: tuple[str, ...]) -> bool:
    """Whether a process event starts one of Triton's own tools (by full path)."""
    if not tools or event not in ("subprocess.Popen", "os.posix_spawn", "os.exec") or not args:
        return False
    program = args[0]
    if program is None and event == "subprocess.Popen" and len(args) > 1 and isinstance(args[1], (list, tuple)):
        program = args[1][0] if args[1] else None  # Popen([path, ...]) audits executable=None
    return isinstance(program, (str, bytes)) and os.path.realpath(os.fsdecode(program)).startswith(tools)


def _auditor(flag):
    run, tools = _audit, _TOOLS  # bound now, before student code: rebinding the module's names changes nothing

    def audit(event: str, args: tuple) -> None:
        run(flag, event, args, tools)
    return audit


def _audit(flag, event: str, args: tuple, tools: tuple[str, ...] = _TOOLS) -> None:
    """Permanent audit hook: notes what the student's code tried (it cannot be removed)."""
    try:
        if event == "socket.connect" or event == "socket.getaddrinfo":
            flag("network", event)
        elif event == "open" and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0])
            if any(w in path for w in _WATCHED_PATHS) and not path.startswith(tuple(_own)):
                flag("read-hidden", f"open {path[:120]}")
            mode, flags = (args + (None, None))[1:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            home = os.environ.get("HOME", "/nonexistent")
            if writes and not (path.startswith(home + "/") or os.path.normpath(path) in (home, *_QUIET_WRITES)):
                flag("write-outside", f"open {os.path.normpath(path)[:120]} for writing")
        elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0]).rstrip("/") + "/"
            if any(w in path for w in _WATCHED_PATHS) and not path.startswith(tuple(_own)):
                flag("read-hidden", f"{event} {path[:120]}")
        elif event == "import" and args and isinstance(args[0], str):
            if args[0].split(".")[0] in _HARNESS:
                flag("harness-import", f"import {args[0]}")
        elif event in ("os.fork", "os.forkpty", "subprocess.Popen", "os.system", "os.posix_spawn", "os.exec"):
            if not _triton_tool(event, args, tools):  # Triton compiling a kernel runs its own ptxas
                flag("process", event)
        elif event == "os.kill" or event == "os.killpg":
            flag("signal", event)
    except Exception:  # noqa: BLE001 - an audit hook must never raise into the student's code
        pass


def main() -> int:
    global flag
    config = json.loads(open(sys.argv[1], encoding="utf-8").read())
    config["fds"] = (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    sys.path[:0] = [config["code"], os.path.dirname(os.path.abspath(__file__))]
    import torch  # noqa: F401 - before the student's code, so the originals below are real
    import torch.testing

    import wire
    from infralab import distributed, guards, i18n  # noqa: F401 - before the audit hook: the harness importing itself is no flag
    perf_ops = None
    if config.get("gpu"):  # grade --gpu: the challenges' side (its timer snapshot is taken now, before student code)
        import perf_ops
        if torch.cuda.is_available():  # CUDA starts now: CUDA_VISIBLE_DEVICES set by student code changes nothing
            torch.cuda.init()

    i18n.catalog()  # loaded now: its modules are the harness's, not the student's imports
    flag = _flag_sender(config["fds"][2], wire.send)

    torch.set_num_threads(int(config.get("threads", 1)))
    originals = {
        "torch.allclose": torch.allclose, "torch.equal": torch.equal, "torch.isclose": torch.isclose,
        "torch.testing.assert_close": torch.testing.assert_close,
        "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.allclose": torch.Tensor.allclose,
    }
    _own.append(os.path.dirname(config["code"]) + "/")
    sys.addaudithook(_auditor(flag))
    wire.send(config["fds"][1], {"ready": True})
    session = Session(config, torch, wire, originals, guards, flag)
    session.perf = perf_ops.PerfOps(session) if perf_ops is not None else None
    session.intact.update(session.perf_parts())
    session.serve()
    return 0


class Session:
    def __init__(self, config, torch, wire, originals, guards, flag):
        self.config, self.torch, self.wire, self.guards, self.flag = config, torch, wire, guards, flag
        self.originals = originals
        self.package = config["package"]
        self.banned: dict[str, list[str]] = config.get("banned", {})
        self.mutates: dict[str, dict[str, dict[str, int]]] = config.get("mutates", {})
        self.code_root = os.path.realpath(config["code"]) + "/"
        # what the guards are made of, to check after every call that the student's code left them alone
        self.intact = {**{f"Session.{k}": v for k, v in vars(Session).items()},
                       **{f"guards.{k}": v for k, v in vars(guards).items() if callable(v)},
                       "executor.flag": flag}
        self.objects: dict[int, object] = {}
        self.object_banned: dict[int, tuple[str, str]] = {}  # handle -> (module, where)
        self.perf = None  # perf_ops.PerfOps, set by main()

    # -- the student's objects -------------------------------------------------------------
    def handle(self, obj, module: str) -> dict:
        h = len(self.objects) + 1
        self.objects[h] = obj
        self.object_banned[h] = module
        cls = type(obj)
        if cls.__eq__ is not object.__eq__ and not isinstance(obj, (type(sys), type)):
            self.flag("forged-object", f"{module}: returned a {cls.__name__} that overrides __eq__")
        return {"$h": h, "type": cls.__name__[:80]}

    def encoder(self, module: str):
        session = self

        class _Encoder(self.wire.Encoder):
            def on_tensor(self, t):
                if type(t) is not session.torch.Tensor and type(t) is not session.torch.nn.Parameter:
                    session.flag("tensor-subclass", f"{module}: returned a tensor subclass {type(t).__name__}; "
                                            "only its raw data was sent")
                return self.tensor(t)

        return _Encoder(lambda obj: self.handle(obj, module))

    def decode(self, data, tensors, module: str = ""):
        def on_handle(d):
            if d["$h"] not in self.objects:
                raise self.wire.WireError(f"unknown handle {d['$h']}")  # kit bug, not a user message
            return self.objects[d["$h"]]
        place = None
        if self.config.get("gpu"):  # grade --gpu: GPU tensors back on the device; a Triton exercise's all of them
            everything = module in self.config.get("triton", ())
            place = lambda t, was_cuda: t.to("cuda") if was_cuda or everything else t  # noqa: E731
        return self.wire.decode(data, tensors, on_handle, place=place)

    # -- requests ----------------------------------------------------------------------------
    def serve(self) -> None:
        # bound once: replacing Session's or the guards' attributes later changes nothing here
        receive, send, dispatch, describe = self.wire.receive, self.wire.send, self.dispatch, self.describe
        check_tampering, lost_guards, flag = self.check_tampering, self.lost_guards, self.flag
        from infralab.i18n import tr
        requests, answers, flags = self.config["fds"]
        sync = 0
        while True:
            try:
                request, tensors = receive(requests)
            except self.wire.Closed:
                return
            try:
                answer, out = dispatch(request, tensors)
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: report, keep serving
                answer, out = {"error": describe(exc)}, {}
            check_tampering()
            lost = lost_guards()
            if lost:
                flag("guard-disabled", f"{', '.join(lost[:5])} replaced")
                where = str(request.get("module") or request.get("name") or request.get("op"))
                message = tr("integrity.guard_disabled", where=where, what=f"{', '.join(lost[:5])} replaced")
                answer, out = {"error": {"type": "GuardDisabled", "builtin": False, "where": "", "traceback": "",
                                         "message": message}}, {}
            sync += 1
            answer["sync"] = sync
            try:
                send(flags, {"sync": sync})
            except Exception:  # noqa: BLE001 - the judge notices the missing marker
                pass
            try:
                send(answers, answer, out)
            except Exception as exc:  # noqa: BLE001 - an unencodable answer is an error answer
                send(answers, {"error": describe(exc), "sync": sync}, {})

    def perf_parts(self) -> dict:
        """The challenges' side (grade --gpu): its class's functions and the checks it calls."""
        if self.perf is None:
            return {}
        import perf_ops
        return {**{f"PerfOps.{k}": v for k, v in vars(type(self.perf)).items()},
                **{f"checked.{k}": v for k, v in vars(perf_ops.checked).items() if callable(v)},
                **{f"device_gate.{c.__name__}.{k}": v for c in (perf_ops.device_gate.DeviceGate, perf_ops.device_gate.Armed)
                   for k, v in vars(c).items() if callable(v)},
                **{f"device_gate.{f}": getattr(perf_ops.device_gate, f, None) for f in ("captured", "gate_or_none")},
                "workloads.refill": getattr(perf_ops.workloads, "refill", None)}

    def lost_guards(self) -> list[str]:
        """Names of the executor's and the guards' parts that no longer are what they were."""
        now = {**{f"Session.{k}": v for k, v in vars(Session).items()},
               **{f"guards.{k}": v for k, v in vars(self.guards).items() if callable(v)},
               "executor.flag": globals().get("flag"), **self.perf_parts()}
        return sorted(k for k, v in self.intact.items() if now.get(k) is not v)

    def dispatch(self, request: dict, tensors: dict):
        op = request.get("op")
        if op == "import":
            module = request["module"]
            obj = importlib.import_module(f"{self.package}.{module}")
            enc = self.encoder(module)
            return {"ok": enc.encode(obj)}, enc.tensors
        if op == "run_ranks":
            return self.run_ranks(request, tensors)
        if self.perf is not None and op in self.perf.OPS:  # a performance challenge (grade --gpu): perf_ops.py
            return self.perf.handle(request)
        h = request["h"]
        if h not in self.objects:
            raise LookupError(f"unknown handle {h}")  # kit bug, not a user message
        module = self.object_banned[h]
        obj = self.objects[h]
        if op == "getattr":
            value = getattr(obj, request["name"])
            enc = self.encoder(module)
            if callable(value) and not isinstance(value, self.torch.Tensor):
                return {"ok": {"$callable": type(value).__name__}}, {}
            return {"ok": enc.encode(value)}, enc.tensors
        if op == "call":
            fn = obj if request.get("name") is None else getattr(obj, request["name"])
            args = self.decode(request.get("args", []), tensors, module)
            kwargs = self.decode(request.get("kwargs", {"$dict": []}), tensors, module)
            name = request.get("name") or ""
            key = name if isinstance(obj, type(sys)) else f"{type(obj).__name__}.{name}"
            allowed = self.mutates.get(module, {}).get(key, {})
            before = self.snapshot(args, kwargs, allowed)
            result = self.guarded_call(fn, module, name, args, kwargs, allowed)
            enc = self.encoder(module)
            answer = {"ok": enc.encode(result)}
            changed = {}
            for path, (t, data) in before.items():
                if data != self.raw(t):  # bytes: NaN-safe
                    changed[path] = enc.tensor(t)
            if changed:
                answer["writeback"] = changed
            return answer, enc.tensors
        raise ValueError(f"unknown request {op!r}")  # kit bug, not a user message

    def run_ranks(self, request: dict, tensors: dict):
        """Every rank of a multi-rank exercise, on the simulated group (infralab.distributed,
        shipped into the kit): the values and the traffic of each rank, as data."""
        from infralab import distributed

        module = request["module"]
        obj = importlib.import_module(f"{self.package}.{module}")
        calls = [(name, [tuple(a) for a in args]) for name, args in self.decode(request["calls"], tensors)[0]]
        results = distributed._run_simulated(obj, calls, int(request["world_size"]),
                                             bool(request["allow_collectives"]), float(request["timeout_s"]))
        data = [[{"value": r.value, "sends": [list(x) for x in r.sends], "recvs": [list(x) for x in r.recvs],
                  "collectives": list(r.collectives), "ops": [list(x) for x in r.ops]} for r in call]
                for call in results]
        enc = self.encoder(module)
        return {"ok": enc.encode(data)}, enc.tensors

    def raw(self, t) -> bytes:
        c = self.torch.Tensor.contiguous(t)
        if self.torch._C.TensorBase.is_cuda.__get__(c):
            c = self.torch.Tensor.cpu(c)
        if c.numel() == 0:
            return b""
        return bytes(c.reshape(-1).view(self.torch.uint8).numpy())

    def snapshot(self, args, kwargs, allowed: dict[str, int]) -> dict:
        """The tensors the spec lets the call change (course.yml ``mutates:``) and their bytes before
        it: only these are written back into the judge's tensors (any other change fails the call)."""
        found = {}
        for i, a in enumerate(args):
            if type(a) is self.torch.Tensor and self.guards.may_change(i, allowed):
                found[f"a{i}"] = (a, self.raw(a))
        for k, a in kwargs.items():
            if type(a) is self.torch.Tensor and self.guards.may_change(k, allowed):
                found[f"k{k}"] = (a, self.raw(a))
        return found

    def own_kernel(self, file: str) -> bool:
        return os.path.realpath(file).startswith(self.code_root)

    def guarded_call(self, fn, module: str, name: str, args, kwargs, allowed: dict[str, int]):
        """The call under the exercise's guards, as in-process (infralab.guards.checked_call)."""
        return self.guards.checked_call(fn, args, kwargs, where=f"{module}: {name}", banned=self.banned.get(module, ()),
                                        triton=module in self.config.get("triton", ()), allowed=allowed,
                                        on_flag=self.flag, own_kernel=self.own_kernel)

    def check_tampering(self) -> None:
        torch = self.torch
        current = {
            "torch.allclose": torch.allclose, "torch.equal": torch.equal, "torch.isclose": torch.isclose,
            "torch.testing.assert_close": torch.testing.assert_close,
            "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.allclose": torch.Tensor.allclose,
        }
        for name, fn in current.items():
            if fn is not self.originals[name]:
                self.flag("tampering", f"{name} was replaced")

    def describe(self, exc: BaseException) -> dict:
        frames = traceback.extract_tb(exc.__traceback__)
        own = [f for f in frames if os.path.realpath(f.filename).startswith(self.code_root)]
        frames = own or [f for f in frames if "importlib" not in f.filename and not f.filename.endswith(
            ("executor.py", "wire.py", "guards.py", "contextlib.py"))]  # where the student's code failed
        return {
            "type": type(exc).__name__,
            "builtin": type(exc).__module__ == "builtins",
            "message": str(exc)[:2000],
            "traceback": "".join(traceback.format_list(frames[-3:]))[-3000:],
            "where": f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "",
        }


if __name__ == "__main__":
    sys.exit(main())
