"""Performance challenges declared in course.yml (the ``perf:`` list of an exercise).

One entry::

    - id: large                          # unique within the exercise
      workload: rmsnorm                  # how inputs, candidate call, reference and baselines are made
      shapes: [{M: 32768, N: 4096}]      # one or more; names are the workload's dimensions
      dtype: bfloat16
      metric: bandwidth                  # bandwidth (GB/s, needs `bytes`) or throughput (TFLOP/s, needs `flops`)
      bytes: "4*M*N*s + N*s"             # arithmetic over the shape's names, `s` (bytes per element) and options
      flops: "5*M*N"                     # optional here (the metric is bandwidth): with both, the roofline
                                         # (infralab.perf.roofline) places the kernel at flops/bytes
      baseline: eager                    # one of the workload's baselines, timed interleaved in the same run
      pass: {fraction: 0.60, of: copy_gbps}        # `of`: a profile ceiling, or `baseline` (same-run speed ratio)
      challenge: {fraction: 0.80, of: copy_gbps}
      options: {causal: true}            # passed to the workload (optional)
      profiles: [h200]                   # only on these profiles (optional; default: every registered GPU)

:func:`validate_challenge` is called by infralab/course.py for each entry and returns it normalised.
"""
from __future__ import annotations

import ast
import operator
import re
from pathlib import Path
from typing import Any

from infralab.errors import CourseError
from infralab.i18n import tr
from infralab.perf.decision import REFERENCE_FLAG
from infralab.perf.profiles import CEILINGS

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
METRICS = {"bandwidth": ("bytes", "GB/s"), "throughput": ("flops", "TFLOP/s")}
_KEYS = {"id", "workload", "shapes", "dtype", "metric", "bytes", "flops", "baseline", "pass", "challenge",
         "options", "profiles"}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def evaluate(formula: str, names: dict[str, float]) -> float:
    """Evaluate an arithmetic formula (``+ - * / // **``, numbers, names); raises ValueError otherwise."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as e:
        raise ValueError(tr("perf.spec.not_arithmetic", problem=e.msg)) from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError(tr("perf.spec.unknown_name", name=node.id, known=", ".join(sorted(names))))
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise ValueError(tr("perf.spec.only_arithmetic", node=ast.dump(node)[:40]))

    return float(ev(tree))


def formula_names(shape: dict[str, int], dtype: str, options: dict[str, Any]) -> dict[str, float]:
    """The names a bytes/flops formula may use: the shape's dimensions, ``s``, numeric options."""
    names: dict[str, float] = {"s": DTYPE_BYTES[dtype]}
    for k, v in options.items():
        if isinstance(v, (bool, int, float)):
            names[k] = float(v)
    names.update({k: float(v) for k, v in shape.items()})
    return names


def case_id(exercise_name: str, challenge: dict[str, Any], shape: dict[str, int]) -> str:
    """The pytest id of one challenge shape in a part's ``test_perf.py`` (``rmsnorm-large-32768x4096``)."""
    return f"{exercise_name}-{challenge['id']}-{'x'.join(str(v) for v in shape.values())}"


def work_amount(challenge: dict[str, Any], shape: dict[str, int]) -> float:
    """Bytes moved or FLOPs done by one call at ``shape``: the amount the challenge's metric counts."""
    return work_amounts(challenge, shape)[METRICS[challenge["metric"]][0]]


def work_amounts(challenge: dict[str, Any], shape: dict[str, int]) -> dict[str, float]:
    """Every amount the challenge declares at ``shape``: ``bytes`` and/or ``flops`` (the metric's one
    always; the other when declared, for the roofline's arithmetic intensity)."""
    names = formula_names(shape, challenge["dtype"], challenge["options"])
    return {key: evaluate(challenge[key], names) for key, _ in METRICS.values() if isinstance(challenge.get(key), str)}


def _threshold(file: Path, key: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != {"fraction", "of"}:
        raise CourseError(file, key, tr("perf.spec.threshold_mapping"), raw)
    if raw["of"] != "baseline" and raw["of"] not in CEILINGS:
        raise CourseError(file, f"{key}.of", tr("perf.spec.threshold_of", ceilings=", ".join(sorted(CEILINGS))),
                          raw["of"])
    frac = raw["fraction"]
    # a speed-up over the baseline may pass 2x (W4A16 at batch 1 reads a quarter of the bytes), but not the flag
    top = REFERENCE_FLAG if raw["of"] == "baseline" else 2.0
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= top or frac == REFERENCE_FLAG:
        raise CourseError(file, f"{key}.fraction", tr("perf.spec.threshold_fraction"), frac)
    return {"fraction": float(frac), "of": raw["of"]}


def validate_challenge(file: Path | str, key: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Check one ``perf:`` entry; return it normalised (defaults filled). CourseError names the key."""
    from infralab.perf.workloads import WORKLOADS  # cheap: workloads import torch lazily

    file = Path(file)
    for k in raw:
        if k not in _KEYS:
            raise CourseError(file, f"{key}.{k}", tr("course.one_of", names=sorted(_KEYS)), k)
    for k in ("workload", "shapes", "dtype", "metric", "baseline", "pass", "challenge"):
        if k not in raw:
            raise CourseError(file, f"{key}.{k}", tr("course.key_present"))
    cid = raw.get("id", "default")
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_\-]*", cid):
        raise CourseError(file, f"{key}.id", tr("perf.spec.lower_case_name"), cid)
    wl = WORKLOADS.get(raw["workload"])
    if wl is None:
        raise CourseError(file, f"{key}.workload", tr("course.one_of", names=sorted(WORKLOADS)), raw["workload"])
    if raw["dtype"] not in DTYPE_BYTES:
        raise CourseError(file, f"{key}.dtype", tr("course.one_of", names=sorted(DTYPE_BYTES)), raw["dtype"])
    if raw["metric"] not in METRICS:
        raise CourseError(file, f"{key}.metric", tr("course.one_of", names=sorted(METRICS)), raw["metric"])
    formula_key = METRICS[raw["metric"]][0]
    if not isinstance(raw.get(formula_key), str):
        raise CourseError(file, f"{key}.{formula_key}", tr("perf.spec.formula_needed", metric=raw["metric"]),
                          raw.get(formula_key))
    declared = [k for k, _ in METRICS.values() if raw.get(k) is not None]  # the metric's, and the other if given
    for k in declared:
        if not isinstance(raw[k], str):
            raise CourseError(file, f"{key}.{k}", tr("perf.spec.formula"), raw[k])
    if raw["baseline"] not in wl.baselines:
        raise CourseError(file, f"{key}.baseline",
                          tr("perf.spec.baseline", workload=wl.name, baselines=sorted(wl.baselines)), raw["baseline"])
    options = raw.get("options", {}) or {}
    if not isinstance(options, dict) or any(k not in wl.options for k in options):
        raise CourseError(file, f"{key}.options", tr("perf.spec.options", keys=sorted(wl.options)), options)
    shapes = raw["shapes"]
    if not isinstance(shapes, list) or not shapes:
        raise CourseError(file, f"{key}.shapes", tr("perf.spec.shapes"), shapes)
    out = dict(raw, id=cid, options=dict(options), profiles=list(raw.get("profiles", []) or []))
    for i, shape in enumerate(shapes):
        if not isinstance(shape, dict) or set(shape) != set(wl.dims):
            raise CourseError(file, f"{key}.shapes[{i}]", tr("perf.spec.shape_dims", dims=list(wl.dims)),
                              shape)
        for d, v in shape.items():
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise CourseError(file, f"{key}.shapes[{i}].{d}", tr("perf.spec.positive_integer"), v)
        for k in declared:
            try:
                amount = evaluate(raw[k], formula_names(shape, raw["dtype"], out["options"]))
            except ValueError as e:
                raise CourseError(file, f"{key}.{k}", tr("perf.spec.valid_formula"), str(e)) from None
            if amount <= 0:
                raise CourseError(file, f"{key}.{k}", tr("perf.spec.positive_amount", shape=shape), amount)
    out["pass"] = _threshold(file, f"{key}.pass", raw["pass"])
    out["challenge"] = _threshold(file, f"{key}.challenge", raw["challenge"])
    if out["pass"]["of"] == out["challenge"]["of"] and out["pass"]["fraction"] > out["challenge"]["fraction"]:
        raise CourseError(file, f"{key}.challenge.fraction",
                          tr("perf.spec.challenge_at_least_pass", fraction=out["pass"]["fraction"]),
                          out["challenge"]["fraction"])
    return out
