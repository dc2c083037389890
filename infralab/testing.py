"""Helpers for the course's tests: one tolerance table, one comparison, poisoned outputs.

Every numerical check in the course goes through :func:`assert_close`:

- tolerances come from :func:`tolerance`, keyed to the dtype (one table for the whole course);
- NaN or Inf in the answer never passes where the expected value is finite, and where the
  expected value is ±Inf only the same infinity passes;
- shape and dtype are checked first, with a message that says what was expected;
- a mismatch names how many elements differ, the worst one and where, and, given the outputs
  of known mistakes (``mistakes={"interleaved pairs instead of rotate-half": wrong}``), which
  known mistake the answer looks like;
- ``name=`` says what the value is: code or math as a plain string (``"logits"``), prose as an
  ``(english, chinese)`` pair (``("row sums", "行和")``), shown in the run's language.

A check that is not a numerical comparison (a count, a property, a returned structure) goes through
:func:`expect`, never a bare ``assert``: its message comes from the catalogue, in the run's language,
with the values that differ as fields.

Output buffers a student's code writes into are created poisoned (:func:`poisoned`) so that a
kernel that forgets to write part of its output cannot pass on leftover memory.

With ``INFRALAB_MARGIN_LOG=<file>`` set (``benchmarks/soundness_sweep.py --margins`` sets it), every
:func:`assert_close` that has a tolerance appends how much of it the answer used to that file: the
deep sweep's evidence of how far a correct answer stays from failing, beyond whether it passed.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Union

import torch

from infralab.i18n import localized, tr

# (rtol, atol) per dtype: the course's single tolerance table.
_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-9, 1e-9),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (5e-3, 5e-3),
    torch.bfloat16: (3e-2, 3e-2),
    torch.float8_e4m3fn: (1.25e-1, 1.25e-1),
    torch.float8_e5m2: (2.5e-1, 2.5e-1),
}

MARGIN_LOG = "INFRALAB_MARGIN_LOG"

MistakeOutput = Union[torch.Tensor, Callable[[], torch.Tensor]]
Label = Union[str, tuple[str, str]]  # a known mistake's description: English, or (english, chinese)
# What a check calls the value it compares (``name=``): code or math ("logits", "y = x Wᵀ") as a
# plain string, prose as an (english, chinese) pair; messages show it in the run's language.
Name = Label


class Mismatch(AssertionError):
    """A wrong answer. ``diagnosis`` names the known mistake it looks like, if any."""

    def __init__(self, message: str, diagnosis: Label | None = None):
        diagnosis = None if diagnosis is None else localized(diagnosis)  # (english, chinese) -> this language
        super().__init__(message if diagnosis is None else f"{message}\n{tr('core.looks_like', diagnosis=diagnosis)}")
        self.diagnosis = diagnosis


def expect(condition: object, key: str, /, **fields: object) -> None:
    """Raise :class:`Mismatch` with the catalogue message ``key`` (infralab/i18n, in the run's
    language, formatted with ``fields``) unless ``condition`` holds: the test's ``assert`` for a
    check a student can fail. ``fields`` are evaluated before the check, so pass values that are
    cheap and safe to compute whatever the answer is (``getattr(out, "shape", None)``)."""
    if not condition:
        raise Mismatch(tr(key, **fields))


def tolerance(dtype: torch.dtype, reduction: int | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing values of ``dtype``.

    ``reduction``: the length of the longest sum behind each output element (e.g. K of a
    matmul). Rounding error grows like its square root, so tolerances widen by
    ``sqrt(reduction / 256)`` past 256 terms and never shrink.
    """
    if dtype not in _TOLERANCES:
        return (0.0, 0.0)  # integers and bools compare exactly
    rtol, atol = _TOLERANCES[dtype]
    if reduction is not None and reduction > 256:
        widen = math.sqrt(reduction / 256)
        rtol, atol = rtol * widen, atol * widen
    return rtol, atol


def cancellation_atol(terms: torch.Tensor, dtype: torch.dtype = torch.float32, ulps: int = 8) -> float:
    """The absolute tolerance of a result that is a difference of terms as large as ``max|terms|``
    (log-sum-exp minus the target logit, x - mean): ``dtype``'s atol plus ``ulps`` units of roundoff
    at that magnitude, since a correct answer computed in ``dtype`` carries that much absolute error
    however small the result."""
    _, atol = tolerance(dtype)
    return atol + ulps * torch.finfo(dtype).eps * float(terms.detach().abs().max())


def _describe(t: torch.Tensor) -> str:
    return f"shape {tuple(t.shape)}, dtype {t.dtype}"


def check_tensor(actual: Any, *, shape: tuple[int, ...] | None = None, dtype: torch.dtype | None = None,
                 name: Name = "output") -> torch.Tensor:
    """The answer is a tensor of the expected shape and dtype; raises Mismatch otherwise."""
    name = localized(name)
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(tr("loop.not_a_tensor", name=name, got=type(actual).__name__))
    if type(actual) is not torch.Tensor and not isinstance(actual, torch.nn.Parameter):
        raise Mismatch(tr("loop.tensor_subclass", name=name, got=type(actual).__name__))
    if shape is not None and tuple(actual.shape) != tuple(shape):
        raise Mismatch(tr("loop.wrong_shape", name=name, expected=tuple(shape), got=tuple(actual.shape)))
    if dtype is not None and actual.dtype != dtype:
        raise Mismatch(tr("loop.wrong_dtype", name=name, expected=dtype, got=actual.dtype))
    return actual


def _close_mask(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    close = (a - e).abs() <= atol + rtol * e.abs()
    ok = torch.where(torch.isfinite(e), close, a == e)  # an infinity is matched only by the same infinity
    ok &= ~torch.isnan(a)  # NaN never passes (and an expected NaN is never matched)
    return ok


def diagnose(actual: torch.Tensor, mistakes: Mapping[Label, MistakeOutput] | None,
             rtol: float, atol: float) -> Label | None:
    """The label of the first known mistake whose output matches ``actual``, or None. A label is
    English text or an ``(english, chinese)`` pair; :class:`Mismatch` shows it in the run's language."""
    for label, produce in (mistakes or {}).items():
        try:
            wrong = produce() if callable(produce) else produce
        except Exception:  # a candidate that cannot be formed here is simply not it
            continue
        if not isinstance(wrong, torch.Tensor) or wrong.shape != actual.shape:
            continue
        if bool(_close_mask(actual, wrong, 2 * rtol, 2 * atol).all()):
            return label
    return None


def tolerance_used(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> float:
    """The largest ``|actual - expected| / (atol + rtol |expected|)`` over the finite expected
    elements: below 1 passes, and how far below is the margin a correct answer keeps. NaN counts as
    infinitely far."""
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    finite = torch.isfinite(e)
    used = ((a - e).abs() / (atol + rtol * e.abs()))[finite].nan_to_num(nan=math.inf)
    return float(used.max()) if used.numel() else 0.0


def _log_margin(path: str, used: float, name: str, from_table: bool) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
    line = json.dumps({"test": test, "name": name, "used": used, "table": from_table}, ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as log:  # one short line per write: appends from xdist workers stay whole
        log.write(line + "\n")


def assert_close(actual: Any, expected: torch.Tensor, *, name: Name = "output",
                 rtol: float | None = None, atol: float | None = None, reduction: int | None = None,
                 mistakes: Mapping[Label, MistakeOutput] | None = None, check_dtype: bool = True) -> None:
    """``actual`` equals ``expected`` within the dtype's tolerance, or raise :class:`Mismatch`.

    ``name`` is what the message calls the value: a plain string for code or math, an
    ``(english, chinese)`` pair for prose (see :data:`Name`). ``rtol``/``atol`` override the table for one check (say why in the test); ``reduction`` widens
    it for long sums (see :func:`tolerance`); ``mistakes`` maps a known mistake's description to
    its output (or a function making it), used only to explain a failure.
    """
    name = localized(name)
    check_tensor(actual, shape=tuple(expected.shape), dtype=expected.dtype if check_dtype else None, name=name)
    table_rtol, table_atol = tolerance(expected.dtype, reduction)
    from_table = rtol is None and atol is None
    rtol = table_rtol if rtol is None else rtol
    atol = table_atol if atol is None else atol
    ok = _close_mask(actual, expected, rtol, atol)
    if os.environ.get(MARGIN_LOG) and (rtol or atol):
        _log_margin(os.environ[MARGIN_LOG], tolerance_used(actual, expected, rtol, atol), name, from_table)
    if bool(ok.all()):
        return
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    bad = ~ok
    n_bad, n = int(bad.sum()), ok.numel()
    if bool(torch.isnan(a).any()):
        head = tr("loop.nan_elements", name=name, count=int(torch.isnan(a).sum()), total=n)
    elif bool(torch.isinf(a[~torch.isinf(e)]).any()) if e.numel() else False:
        head = tr("loop.inf_elements", name=name)
    else:
        head = tr("loop.differ", name=name, count=n_bad, total=n, percent=100.0 * n_bad / n, rtol=rtol, atol=atol)
    diff = torch.where(bad, (a - e).abs().nan_to_num(nan=math.inf), torch.zeros_like(a))
    flat = int(diff.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape)) if a.dim() else ()
    got, want = a.flatten()[flat].item(), e.flatten()[flat].item()
    message = tr("loop.worst", head=head, index=index, got=got, expected=want)
    raise Mismatch(message, diagnose(actual, mistakes, rtol, atol))


def assert_equal(actual: Any, expected: Any, *, name: Name = "output",
                 mistakes: Mapping[Label, Any] | None = None) -> None:
    """Exact equality for integers, tensors of integers, lists and tuples; NaN never equals."""
    name = localized(name)
    if isinstance(expected, torch.Tensor) and expected.is_floating_point():
        assert_close(actual, expected, name=name, rtol=0.0, atol=0.0, mistakes=mistakes)
        return
    if isinstance(expected, torch.Tensor):
        check_tensor(actual, shape=tuple(expected.shape), dtype=expected.dtype, name=name)
        same = bool(torch.equal(actual.cpu(), expected.cpu()))
    else:
        same = type(actual) is type(expected) and actual == expected
    if same:
        return
    diagnosis = None
    for label, wrong in (mistakes or {}).items():
        wrong = wrong() if callable(wrong) else wrong
        if isinstance(wrong, torch.Tensor) and isinstance(actual, torch.Tensor):
            if wrong.shape == actual.shape and bool(torch.equal(wrong.cpu(), actual.cpu())):
                diagnosis = label
                break
        elif wrong == actual:
            diagnosis = label
            break
    raise Mismatch(tr("loop.not_equal", name=name, expected=_short(expected), got=_short(actual)), diagnosis)


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value.tolist()) if isinstance(value, torch.Tensor) and value.numel() <= 64 else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def poisoned(shape: tuple[int, ...], dtype: torch.dtype, device: str | torch.device = "cpu") -> torch.Tensor:
    """A buffer for a student's code to write into, filled with NaN (or -7777 for integers)."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full(shape, -7777, dtype=dtype, device=device)


def assert_all_written(actual: Any, *, name: Name = "output", diagnosis: Label | None = None) -> None:
    """No element of ``actual`` is NaN: the poison of :func:`poisoned` buffers (and of fresh
    allocations inside a Triton exercise, see infralab.triton_watch) was overwritten everywhere.
    Raise :class:`Mismatch` naming how many and where, with ``diagnosis`` as the likely mistake."""
    name = localized(name)
    actual = check_tensor(actual, name=name)
    if not actual.is_floating_point():
        return
    nan = torch.isnan(actual.detach().cpu())
    if bool(nan.any()):
        first = tuple(int(i) for i in nan.nonzero()[0])
        raise Mismatch(tr("loop.never_written", name=name, count=int(nan.sum()), total=nan.numel(), first=first),
                       diagnosis)


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill an existing buffer with poison in place and return it."""
    t.fill_(float("nan") if t.dtype.is_floating_point else -7777)
    return t


def randn(*shape: int, dtype: torch.dtype = torch.float32, generator: torch.Generator | None = None,
          device: str | torch.device = "cpu", scale: float = 1.0) -> torch.Tensor:
    """Standard-normal test input drawn in fp32 and cast, so every dtype sees the same values."""
    x = torch.randn(*shape, generator=generator, dtype=torch.float32) * scale
    return x.to(device=device, dtype=dtype)


def seed_everything(value: int) -> None:
    """Seed Python's ``random``, numpy (when installed) and torch with ``value``."""
    import random
    random.seed(value)
    try:
        import numpy as np
        np.random.seed(value)
    except ImportError:
        pass
    torch.manual_seed(value)
