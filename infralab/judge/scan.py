"""A static scan of submitted source, before any of it runs: what has no place in an answer.

The judge parses each taken module (never imports it) and walks its syntax tree, noting each
use of: the executor's or the harness's names, torch's private dispatch switches, frame or gc
walking, ctypes, process-wide hooks, and, in a Triton exercise, ``torch.compile`` (its kernels
must be the student's own ``@triton.jit`` functions) and data taken out of torch (numpy,
``.numpy()``, ``.tolist()``: a result computed there and copied by a kernel of one's own would
otherwise pass the guards' kernel-output evidence). Names hidden in string constants
(``getattr(torch, "_C")``) count as uses. Each finding becomes a ``suspicious-source`` flag
``file:line: what``: evidence for the instructor; the verdicts stay with the guards.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

# attribute or bare name -> why it has no place in an answer
NAMES: dict[str, str] = {
    **{n: "torch's private dispatch switches" for n in (
        "_C", "DisableTorchFunction", "DisableTorchFunctionSubclass", "_DisableTorchDispatch", "_disable_current_modes",
        "_set_torch_function_mode", "_push_mode", "_pop_mode", "_unset_dispatch_mode", "_set_dispatch_mode",
        "_python_dispatch", "_pop_torch_function_stack", "_push_on_torch_function_stack", "TorchDispatchMode",
        "TorchFunctionMode", "_get_current_dispatch_mode_stack", "_len_torch_function_stack",
        "_disable_torch_function", "_is_torch_function_mode_enabled")},
    **{n: "the executor's or the harness's internals" for n in (
        "__main__", "guarded_call", "checked_call", "lost_guards", "check_tampering", "guarding", "triton_watch",
        "_OpGuard", "InterpretedFunction", "JITFunction", "GridExecutor", "launch_enter_hook", "_watched_run",
        "_flag_sender", "_auditor", "infralab")},
    **{n: "frame or gc walking" for n in (
        "_getframe", "currentframe", "getouterframes", "getinnerframes", "get_objects", "get_referrers",
        "get_referents", "f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame")},
    **{n: "process-wide hooks" for n in ("settrace", "setprofile", "addaudithook", "__builtins__", "meta_path")},
}
# imported module (its first component, or the whole dotted name) -> why
MODULES: dict[str, str] = {
    "ctypes": "ctypes", "gc": "frame or gc walking", "pytest": "the harness", "_pytest": "the harness",
    "hypothesis": "the harness", "infralab": "the harness", "__main__": "the executor's internals",
    "executor": "the executor's internals", "wire": "the executor's internals", "guards": "the executor's internals",
    "torch.utils._python_dispatch": "torch's private dispatch switches", "torch.overrides": "torch's private dispatch switches",
}
COMPILE = {"torch._dynamo", "torch._inductor", "torch.compile"}
# in a Triton exercise: computing outside torch and Triton, then copying the result with a kernel,
# would write the outputs from a kernel of the student's own; its ingredients have no place there
OUTSIDE = {"numpy": "numpy in a Triton exercise", "numpy()": "a tensor's data taken out to numpy in a Triton exercise",
           "tolist()": "a tensor's data taken out to Python in a Triton exercise"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def findings(source: str, filename: str, triton: bool = False) -> Iterator[tuple[int, str]]:
    """(line, what) for each suspicious use in ``source``; a file that does not parse yields nothing
    (its import fails in the executor and says why)."""
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Attribute) and node.attr in NAMES:
            yield line, f"{_dotted(node)} ({NAMES[node.attr]})"
        elif isinstance(node, ast.Name) and node.id in NAMES:
            yield line, f"{node.id} ({NAMES[node.id]})"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
            yield line, f"the string {node.value!r} ({NAMES[node.value]})"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            base = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            names = [f"{base}.{a.name}" if base else a.name for a in node.names] if base else \
                [a.name for a in node.names]
            for alias in node.names:
                if alias.name in NAMES:
                    yield line, f"import {alias.name} ({NAMES[alias.name]})"
            for name in ([base] if base else []) + names:
                why = MODULES.get(name) or MODULES.get(name.split(".")[0])
                if why:
                    yield line, f"import {name} ({why})"
                if triton and any(name == c or name.startswith(c + ".") for c in COMPILE):
                    yield line, f"import {name} (torch.compile in a Triton exercise: write the kernels yourself)"
        if triton and isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(m.split(".")[0] == "numpy" for m in modules):
                yield line, f"import numpy ({OUTSIDE['numpy']})"
        if triton and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and f"{node.func.attr}()" in OUTSIDE:
            yield line, f".{node.func.attr}() ({OUTSIDE[node.func.attr + '()']})"
        if triton and isinstance(node, ast.Attribute) and _dotted(node) in COMPILE:
            yield line, f"{_dotted(node)} (torch.compile in a Triton exercise: write the kernels yourself)"


def scan_files(files: dict[str, Path], triton_files: set[str] = frozenset()) -> list[tuple[str, str]]:
    """``suspicious-source`` findings as (kind, ``rel:line: what``) for the files ``{rel: path}``;
    ``triton_files``: the ``rel`` names of Triton exercises' modules."""
    out: list[tuple[str, str]] = []
    for rel, path in sorted(files.items()):
        try:
            source = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        seen = set()
        for line, what in findings(source, rel, rel in triton_files):
            if (line, what) not in seen:
                seen.add((line, what))
                out.append(("suspicious-source", f"{rel}:{line}: {what}"))
    return out
