"""Golden (snapshot) expectations for visible tests: the diagnosis of known mistakes without shipping references.

The references and known mistakes of the exercises live in ``infralab.mistakes`` (dev-only: never
in a student release). A visible test reaches them through the ``golden`` fixture, one way in every
tree::

    def test_rms_norm_eps_goes_inside_the_square_root(impl, golden):
        x, w = randn(4, 32, generator=golden.gen, scale=3e-3), randn(32, generator=golden.gen)
        got = impl(MODULE).rms_norm(x, w, eps=1e-5)
        assert_close(got, golden.ref.reference_rms_norm(x, w, 1e-5), mistakes=golden.ref.rms_mistakes(x, w, 1e-5))

``golden.gen`` is a generator seeded with the test's recorded seed (visible tests replay the same
inputs everywhere; hidden tests keep fresh seeds). ``golden.ref.NAME(...)`` is a call of
``infralab.mistakes.<part>.<exercise>.NAME``; its result (tensors, dicts of known mistakes'
outputs, numbers, tuples) is recorded, with a fingerprint of its arguments, in
``exercises/<part>/tests/golden/<exercise>.safetensors`` + ``.json``. Three modes:

- update (``pytest --update-golden``, dev tree): compute and record;
- verify (default in the dev tree): compute, and fail with :class:`GoldenStale` (naming the exercise
  and test) where the recording is missing or differs: so every dev run, and ``infralab release``,
  checks the goldens;
- replay (a student release, marked by ``.infralab-release``): never imports ``infralab.mistakes``;
  checks the arguments' fingerprint and returns the recorded values.

In every mode the test receives the recorded form (callables of a mistakes dict are evaluated), so
the dev tree runs exactly what a release runs.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import math
from pathlib import Path
from typing import Any

import pytest

from infralab.i18n import tr

DEV_ONLY_PACKAGE = "infralab.mistakes"  # never shipped (infralab.release refuses a release that holds or imports it)
RELEASE_MARKER = ".infralab-release"  # written by infralab release at the release's root
FORMAT = 1
_FLOAT_TYPES = ("torch.float64", "torch.float32", "torch.float16", "torch.bfloat16")


class GoldenStale(AssertionError):
    """A recording that no longer matches the dev tree's references or the test's inputs."""


def golden_dir(course_root: Path, visible_tests: Path) -> Path:
    return Path(course_root) / Path(visible_tests).parent / "golden"


def golden_files(course_root: Path, ex) -> tuple[Path, Path]:
    """(json, safetensors) of exercise ``ex``."""
    folder = golden_dir(course_root, ex.visible_tests)
    return folder / f"{ex.name}.json", folder / f"{ex.name}.safetensors"


def uses_golden(course_root: Path, ex) -> bool:
    """The exercise's visible tests use the ``golden`` fixture, or it has recorded goldens."""
    tests = Path(course_root) / ex.visible_tests
    return golden_files(course_root, ex)[0].is_file() or (tests.is_file() and "golden" in tests.read_text("utf-8"))


# -- the store: one JSON and one safetensors file per exercise ------------------------------------
class Store:
    def __init__(self, json_path: Path, tensor_path: Path):
        self.json_path, self.tensor_path = json_path, tensor_path
        self.tests: dict[str, dict] = {}
        self.tensors: dict[str, Any] = {}
        if json_path.is_file():
            data = json.loads(json_path.read_text(encoding="utf-8"))
            self.tests = data.get("tests", {})
            if tensor_path.is_file():
                from safetensors.torch import load_file
                self.tensors = load_file(str(tensor_path))

    def write(self, keep: set[str]) -> None:
        """Write the recordings of the tests in ``keep`` (the test module's current tests)."""
        from safetensors.torch import save_file
        self.tests = {k: v for k, v in sorted(self.tests.items()) if k.split("[")[0] in keep}
        prefixes = tuple(f"{k}/" for k in self.tests)
        tensors = {k: t.contiguous() for k, t in sorted(self.tensors.items()) if k.startswith(prefixes)}
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        lines = ",\n".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in self.tests.items())
        self.json_path.write_text(f'{{"format": {FORMAT}, "tests": {{\n{lines}\n}}}}\n', encoding="utf-8")
        if tensors:
            save_file(tensors, str(self.tensor_path))
        elif self.tensor_path.exists():
            self.tensor_path.unlink()


# -- encoding a recorded value --------------------------------------------------------------------
def _evaluate(value: Any) -> Any:
    """A mistakes dict's callables evaluated; a candidate that cannot be formed is left out."""
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        out = {}
        for label, item in value.items():
            try:
                item = item() if callable(item) else item
            except Exception:  # noqa: BLE001 - diagnose() skips such a candidate too
                continue
            if item is not None:
                out[label] = _evaluate(item)
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(_evaluate(v) for v in value)
    return value


def _encode(value: Any, prefix: str, tensors: dict) -> Any:
    import torch
    if isinstance(value, torch.Tensor):
        tensors[prefix] = value.clone()
        return {"tensor": prefix}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"dict": {k: _encode(v, f"{prefix}/{i}", tensors) for i, (k, v) in enumerate(value.items())}}
        if not all(isinstance(k, tuple) and len(k) == 2 and all(isinstance(t, str) for t in k) or isinstance(k, str)
                   for k in value):
            raise TypeError(tr("golden.record_dict_keys"))
        return {"pairs": [[list(k) if isinstance(k, tuple) else k, _encode(v, f"{prefix}/{i}", tensors)]
                          for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [_encode(v, f"{prefix}/{i}", tensors) for i, v in enumerate(value)]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(tr("golden.record_type", type=type(value).__name__))


def _decode(node: dict, tensors: dict) -> Any:
    (kind, body), = node.items()
    if kind == "tensor":
        return tensors[body].clone()
    if kind == "pairs":  # a mistakes dict whose labels are (english, chinese) pairs
        return {tuple(k) if isinstance(k, list) else k: _decode(v, tensors) for k, v in body}
    if kind == "dict":
        return {k: _decode(v, tensors) for k, v in body.items()}
    if kind in ("list", "tuple"):
        return (list if kind == "list" else tuple)(_decode(v, tensors) for v in body)
    return body


def _same(a: Any, b: Any) -> bool:
    """Recorded and recomputed values agree (floats within a tenth of the dtype's tolerance)."""
    import torch

    from infralab.testing import tolerance
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return False
        if not a.is_floating_point():
            return bool(torch.equal(a, b))
        rtol, atol = tolerance(a.dtype)
        return bool(torch.allclose(a.double(), b.double(), rtol=rtol / 10, atol=atol / 10, equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


# -- fingerprints of the arguments ----------------------------------------------------------------
def fingerprint(value: Any) -> Any:
    """A small JSON summary of an argument: exact for integers, a few float64 moments for float tensors
    (one-ulp differences of the random inputs between platforms pass; other inputs do not)."""
    import torch
    if isinstance(value, _Ref):
        return {"ref": value.name}
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        head = f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"
        if t.numel() == 0:
            return {"tensor": head}
        flat = t.flatten()
        if not t.is_floating_point():
            x = flat.to(torch.int64)
            return {"tensor": head, "ints": [int(x.sum()), int((x * torch.arange(1, x.numel() + 1)).sum())]}
        x = flat.double()
        finite = torch.isfinite(x)
        w = torch.arange(1, x.numel() + 1, dtype=torch.float64) / x.numel()
        xf = torch.where(finite, x, torch.zeros_like(x))
        nonfinite = torch.where(finite, torch.zeros_like(x), torch.sign(x.nan_to_num(nan=2.0)) + 3.0) * w
        moments = (xf.sum(), xf.abs().sum(), (xf * w).sum(), nonfinite.sum())
        return {"tensor": head, "moments": [float(f"{float(m):.10g}") for m in moments]}
    if isinstance(value, dict):
        return {"dict": {str(k): fingerprint(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"seq": [fingerprint(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, torch.dtype):
        return {"value": str(value)}
    raise TypeError(tr("golden.ref_type", type=type(value).__name__))


def _fingerprints_agree(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        if "moments" in a and "moments" in b:  # float tensors: sum, sum of |x|, weighted sum, non-finite positions
            (s1, a1, w1, n1), (s2, a2, w2, n2) = a["moments"], b["moments"]
            scale = 1e-6 * (a1 + 1.0)
            return a["tensor"] == b["tensor"] and math.isclose(n1, n2, rel_tol=1e-9) \
                and all(abs(u - v) <= scale for u, v in ((s1, s2), (a1, a2), (w1, w2)))
        return a.keys() == b.keys() and all(_fingerprints_agree(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_fingerprints_agree(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


# -- one test's case ------------------------------------------------------------------------------
class _Ref:
    """``golden.ref.NAME``: call it to get (and record) the value; pass it uncalled as an argument."""

    def __init__(self, case: "GoldenCase", name: str):
        self.case, self.name = case, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.case.call(self.name, args, kwargs)


class _Module:
    def __init__(self, case: "GoldenCase"):
        self._case = case

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._case.attribute(name)


class GoldenCase:
    """The ``golden`` fixture of one test: ``gen`` (seeded from the recording) and ``ref`` (the references)."""

    def __init__(self, store: Store, exercise: str, key: str, mode: str, test_file: str = ""):
        import torch
        self.store, self.exercise, self.key, self.mode, self.test_file = store, exercise, key, mode, test_file
        self.recorded = store.tests.get(key)
        derived = int.from_bytes(hashlib.sha256(f"{exercise}:{key}".encode()).digest()[:4], "little")
        self.seed = self.recorded["seed"] if self.recorded else derived
        self.gen = torch.Generator().manual_seed(self.seed)
        self.ref = _Module(self)
        self.calls: list[dict] = []
        self.constants: dict[str, Any] = {}
        self.tensors: dict[str, Any] = {}
        self._module = None

    def _stale(self, what: str) -> GoldenStale:
        kind = "golden.replay" if self.mode == "replay" else "golden.stale"
        return GoldenStale(tr(kind, exercise=self.exercise, test=self.key, what=what, file=self.test_file))

    def _real(self):
        if self._module is None:
            self._module = importlib.import_module(f"{DEV_ONLY_PACKAGE}.{self.exercise}")
        return self._module

    def attribute(self, name: str) -> Any:
        recorded = (self.recorded or {}).get("constants", {})
        if self.mode == "replay":
            return _decode(recorded[name], self.store.tensors) if name in recorded else _Ref(self, name)
        real = getattr(self._real(), name)
        if callable(real):
            return _Ref(self, name)
        self.constants[name] = _encode(real, f"{self.key}/{name}", self.tensors)
        if self.mode == "verify" and (name not in recorded or not _same(_decode(recorded[name], self.store.tensors),
                                                                         real)):
            raise self._stale(tr("golden.constant", name=name))
        return real

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        index = len(self.calls)
        prints = fingerprint([list(args), kwargs])
        entry = {"name": name, "args": prints}
        self.calls.append(entry)
        recorded = (self.recorded or {}).get("calls", [])
        old = recorded[index] if index < len(recorded) else None
        if self.mode != "update":
            if old is None or old["name"] != name:
                raise self._stale(tr("golden.no_call", index=index + 1, name=name))
            old_args = old["args"] if "same_as" not in old else recorded[old["same_as"]]["args"]
            if not _fingerprints_agree(old_args, prints):
                raise self._stale(tr("golden.inputs", index=index + 1, name=name))
        if self.mode == "replay":
            return _decode(old["value"], self.store.tensors)
        resolve = lambda v: getattr(self._real(), v.name) if isinstance(v, _Ref) else v  # noqa: E731
        value = _evaluate(getattr(self._real(), name)(*map(resolve, args), **{k: resolve(v) for k, v in kwargs.items()}))
        entry["value"] = _encode(value, f"{self.key}/{index}", self.tensors)
        if self.mode == "verify" and not _same(_decode(old["value"], self.store.tensors), value):
            raise self._stale(tr("golden.value", index=index + 1, name=name))
        return value

    def save(self) -> None:
        """Update mode: replace this test's recording in the store."""
        calls = []
        for i, call in enumerate(self.calls):
            same = next((j for j in range(i) if self.calls[j]["args"] == call["args"]), None)
            calls.append(call if same is None else {"name": call["name"], "same_as": same, "value": call["value"]})
        self.store.tests[self.key] = {"seed": self.seed, "constants": self.constants, "calls": calls}
        prefix = f"{self.key}/"
        self.store.tensors = {k: t for k, t in self.store.tensors.items() if not k.startswith(prefix)}
        self.store.tensors.update(self.tensors)


# -- the pytest side: option and fixture (registered by infralab.plugin) --------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("infralab").addoption(
        "--update-golden", dest="infralab_update_golden", action="store_true",
        help="record the golden expectations of the visible tests that use the golden fixture "
             "(dev tree only; run with --target solutions -n 0)")


_STORES = pytest.StashKey[dict]()


def _test_key(request: pytest.FixtureRequest) -> str:
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    # the kit's own parameters (the target in soundness mode, the base seed of a sweep) are not the test's:
    # a golden case replays its recorded seed whatever the sweep
    other = [f"{k}={v}" for k, v in sorted(params.items()) if k not in ("_infralab_target", "_infralab_base_seed")]
    return request.node.originalname + (f"[{','.join(other)}]" if other else "")


def golden_mode(config: pytest.Config, course_root: Path) -> str:
    if (Path(course_root) / RELEASE_MARKER).is_file():
        if config.getoption("infralab_update_golden"):
            raise pytest.UsageError(tr("golden.update_in_release"))
        return "replay"
    if config.getoption("infralab_update_golden"):
        if hasattr(config, "workerinput"):
            raise pytest.UsageError(tr("golden.update_parallel"))
        return "update"
    return "verify"


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """This visible test's golden case: ``golden.gen`` and ``golden.ref`` (see infralab.golden)."""
    from infralab.plugin import _state
    state = _state(request.config)
    found = state.exercise_of(request.node.path) if state else None
    if found is None:
        pytest.skip(tr("golden.fixture_scope"))
    ex, _ = found
    mode = golden_mode(request.config, state.course.root)
    stores = request.config.stash.setdefault(_STORES, {})
    if ex.id not in stores:
        stores[ex.id] = Store(*golden_files(state.course.root, ex))
    case = GoldenCase(stores[ex.id], ex.id, _test_key(request), mode, ex.visible_tests.as_posix())
    yield case
    if mode == "update" and (case.calls or case.constants):
        case.save()
        keep = {name for name in dir(request.module) if name.startswith("test")}
        stores[ex.id].write(keep)
