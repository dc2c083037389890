"""The executor: runs inside the cage, imports the student's modules and answers the judge.

Started by boot.py (as an unprivileged user, in its own namespaces) as
``python -I -B executor.py CONFIG.json REQUESTS_FD ANSWERS_FD``; talks to the judge over
those two pipe ends. Its stdout and stderr go to a capped pipe the judge drains. Requests::

    {"op": "import", "module": "part01_transformer.rmsnorm"}      -> handle of the module
    {"op": "getattr", "h": 1, "name": "rms_norm"}               -> {"$callable": ...} or a value
    {"op": "call", "h": 1, "name": "rms_norm", "args": [...], "kwargs": {...}}

Answers: ``{"ok": value, "writeback": {...}, "flags": [...]}`` or ``{"error": {"type",
"message", "traceback"}, "flags": [...]}``. Flags are best-effort observations (audit events,
tampering with torch) that the judge records for the instructor; they never decide a verdict.
This file is copied into the executor's tree next to wire.py, with a mini ``infralab`` package
(the guards, the simulated group; see cage.py) that it imports from.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import traceback


_flags: list[dict] = []
_own: list[str] = [sys.prefix + "/", sys.base_prefix + "/"]  # its own tree and Python: not suspicious
_seen: set[tuple[str, str]] = set()


def flag(kind: str, detail: str) -> None:
    if (kind, detail) not in _seen and len(_seen) < 50:
        _seen.add((kind, detail))
        _flags.append({"kind": kind, "detail": detail})


_WATCHED_PATHS = ("/graders/", "/solutions/", "/fixtures/", "/.git/", "/proc/1/", "infralab-run", "/etc/shadow")
_HARNESS = ("pytest", "_pytest", "infralab", "hypothesis", "solutions", "graders")


def _audit(event: str, args: tuple) -> None:
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
            if writes and not path.startswith(os.environ.get("HOME", "/nonexistent") + "/"):
                flag("write-outside", f"open {os.path.normpath(path)[:120]} for writing")
        elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
            path = os.fsdecode(args[0]).rstrip("/") + "/"
            if any(w in path for w in _WATCHED_PATHS) and not path.startswith(tuple(_own)):
                flag("read-hidden", f"{event} {path[:120]}")
        elif event == "import" and args and isinstance(args[0], str):
            if args[0].split(".")[0] in _HARNESS:
                flag("harness-import", f"import {args[0]}")
        elif event in ("os.fork", "os.forkpty", "subprocess.Popen", "os.system", "os.posix_spawn", "os.exec"):
            flag("process", event)
        elif event == "os.kill" or event == "os.killpg":
            flag("signal", event)
    except Exception:  # noqa: BLE001 - an audit hook must never raise into the student's code
        pass


def main() -> int:
    config = json.loads(open(sys.argv[1], encoding="utf-8").read())
    config["fds"] = (int(sys.argv[2]), int(sys.argv[3]))
    sys.path[:0] = [config["code"], os.path.dirname(os.path.abspath(__file__))]
    import torch  # noqa: F401 - before the student's code, so the originals below are real
    import torch.testing

    import wire
    from infralab import distributed, guards  # noqa: F401 - before the audit hook: the harness importing itself is no flag

    torch.set_num_threads(int(config.get("threads", 1)))
    originals = {
        "torch.allclose": torch.allclose, "torch.equal": torch.equal, "torch.isclose": torch.isclose,
        "torch.testing.assert_close": torch.testing.assert_close,
        "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.allclose": torch.Tensor.allclose,
    }
    _own.append(os.path.dirname(config["code"]) + "/")
    sys.addaudithook(_audit)
    wire.send(config["fds"][1], {"ready": True})
    Session(config, torch, wire, originals, guards).serve()
    return 0


class Session:
    def __init__(self, config, torch, wire, originals, guards):
        self.config, self.torch, self.wire, self.guards = config, torch, wire, guards
        self.originals = originals
        self.package = config["package"]
        self.banned: dict[str, list[str]] = config.get("banned", {})
        self.objects: dict[int, object] = {}
        self.object_banned: dict[int, tuple[str, str]] = {}  # handle -> (module, where)

    # -- the student's objects -------------------------------------------------------------
    def handle(self, obj, module: str) -> dict:
        h = len(self.objects) + 1
        self.objects[h] = obj
        self.object_banned[h] = module
        cls = type(obj)
        if cls.__eq__ is not object.__eq__ and not isinstance(obj, (type(sys), type)):
            flag("forged-object", f"{module}: returned a {cls.__name__} that overrides __eq__")
        return {"$h": h, "type": cls.__name__[:80]}

    def encoder(self, module: str):
        session = self

        class _Encoder(self.wire.Encoder):
            def on_tensor(self, t):
                if type(t) is not session.torch.Tensor and type(t) is not session.torch.nn.Parameter:
                    flag("tensor-subclass", f"{module}: returned a tensor subclass {type(t).__name__}; "
                                            "only its raw data was sent")
                return self.tensor(t)

        return _Encoder(lambda obj: self.handle(obj, module))

    def decode(self, data, tensors):
        def on_handle(d):
            if d["$h"] not in self.objects:
                raise self.wire.WireError(f"unknown handle {d['$h']}")
            return self.objects[d["$h"]]
        return self.wire.decode(data, tensors, on_handle)

    # -- requests ----------------------------------------------------------------------------
    def serve(self) -> None:
        while True:
            try:
                request, tensors = self.wire.receive(self.config["fds"][0])
            except self.wire.Closed:
                return
            try:
                answer, out = self.dispatch(request, tensors)
            except BaseException as exc:  # noqa: BLE001 - SystemExit too: report, keep serving
                answer, out = {"error": self.describe(exc)}, {}
            self.check_tampering()
            answer["flags"] = list(_flags)
            _flags.clear()
            try:
                self.wire.send(self.config["fds"][1], answer, out)
            except Exception as exc:  # noqa: BLE001 - an unencodable answer is an error answer
                self.wire.send(self.config["fds"][1], {"error": self.describe(exc), "flags": []}, {})

    def dispatch(self, request: dict, tensors: dict):
        op = request.get("op")
        if op == "import":
            module = request["module"]
            obj = importlib.import_module(f"{self.package}.{module}")
            enc = self.encoder(module)
            return {"ok": enc.encode(obj)}, enc.tensors
        if op == "run_ranks":
            return self.run_ranks(request, tensors)
        h = request["h"]
        if h not in self.objects:
            raise LookupError(f"unknown handle {h}")
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
            args = self.decode(request.get("args", []), tensors)
            kwargs = self.decode(request.get("kwargs", {"$dict": []}), tensors)
            before = self.snapshot(args, kwargs)
            result = self.guarded_call(fn, module, request.get("name") or "", args, kwargs)
            enc = self.encoder(module)
            answer = {"ok": enc.encode(result)}
            changed = {}
            for path, (t, data) in before.items():
                if data != self.raw(t):  # bytes: NaN-safe
                    changed[path] = enc.tensor(t)
            if changed:
                answer["writeback"] = changed
            return answer, enc.tensors
        raise ValueError(f"unknown request {op!r}")

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
                  "collectives": list(r.collectives)} for r in call] for call in results]
        enc = self.encoder(module)
        return {"ok": enc.encode(data)}, enc.tensors

    def raw(self, t) -> bytes:
        c = self.torch.Tensor.contiguous(t)
        if c.numel() == 0:
            return b""
        return bytes(c.reshape(-1).view(self.torch.uint8).numpy())

    def snapshot(self, args, kwargs) -> dict:
        """The argument tensors and their bytes before the call, for in-place writes (out=...)."""
        found = {}
        for i, a in enumerate(args):
            if type(a) is self.torch.Tensor:
                found[f"a{i}"] = (a, self.raw(a))
        for k, a in kwargs.items():
            if type(a) is self.torch.Tensor:
                found[f"k{k}"] = (a, self.raw(a))
        return found

    def guarded_call(self, fn, module: str, name: str, args, kwargs):
        """The call under the exercise's guards, as in-process (infralab.guards): a banned torch
        routine raises BannedCall and is flagged; a Triton exercise must launch a @triton.jit
        kernel (under the interpreter, loads and stores are bounds-checked)."""
        where = f"{module}: {name}"
        with self.guards.guarding(where, self.banned.get(module, ()), module in self.config.get("triton", ()),
                                  on_ban=lambda routine: flag("banned-call", f"{where} called {routine}")):
            return fn(*args, **kwargs)

    def check_tampering(self) -> None:
        torch = self.torch
        current = {
            "torch.allclose": torch.allclose, "torch.equal": torch.equal, "torch.isclose": torch.isclose,
            "torch.testing.assert_close": torch.testing.assert_close,
            "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.allclose": torch.Tensor.allclose,
        }
        for name, fn in current.items():
            if fn is not self.originals[name]:
                flag("tampering", f"{name} was replaced")

    def describe(self, exc: BaseException) -> dict:
        frames = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in frames if "importlib" not in f.filename and not f.filename.endswith(
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
