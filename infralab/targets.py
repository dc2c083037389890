"""The implementation under test: which code a test run checks, and how a test reaches it.

A target is a base tree (``exercises/`` or ``solutions/``) plus overlay files that replace
single modules of it:

- ``exercises``: the stubs (what a student edits), the default;
- ``solutions``: the reference implementations;
- a folder path: a submission; its modules (``part01_transformer/rope.py``, or the same under
  an ``exercises/`` sub-folder) overlay the stubs, so a submission may hold only changed modules;
- ``mutant:<part>.<exercise>:<name>`` (or a mutant file's path): the solutions with one module
  replaced by a known-wrong implementation from ``fixtures/mutants/<part>/<exercise>/<name>.py``.

Each target loads its modules under a private package name, so several targets live side by side
in one process and a module's relative imports (``from .rope import apply_rope``) resolve inside
the same target. Tests never import modules directly: they call ``impl("part01_transformer.rope")``
and get an :class:`Implementation`, whose attribute access is the only way to the code. The
isolated grading mode returns an object with the same interface whose calls run in a sandbox.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import itertools
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infralab.errors import TargetError
from infralab.guards import guarded

_counter = itertools.count()


@dataclass(frozen=True)
class TargetSpec:
    """What is tested. ``name`` is how it is shown (``solutions``, ``mutant:...``, a path)."""

    name: str
    base: Path
    overlays: dict[str, Path] = field(default_factory=dict)  # dotted module -> file
    kind: str = "exercises"  # exercises | solutions | submission | mutant


def parse_target(text: str, root: Path) -> TargetSpec:
    """Turn a ``--target`` value into a :class:`TargetSpec`; raises TargetError with the reason."""
    root = Path(root)
    if text in ("exercises", "solutions"):
        return TargetSpec(name=text, base=root / text, kind=text)
    if text.startswith("mutant:"):
        try:
            _, module, mutant = text.split(":")
        except ValueError:
            raise TargetError(f"--target {text!r}: expected mutant:<part>.<exercise>:<name>") from None
        part, _, exercise = module.partition(".")
        path = root / "fixtures" / "mutants" / part / exercise / f"{mutant}.py"
        return mutant_target(module, path, root)
    path = Path(text).resolve()
    mutants = (root / "fixtures" / "mutants").resolve()
    if path.is_file() and path.suffix == ".py" and mutants in path.parents:
        part, exercise = path.relative_to(mutants).parts[:2]
        return mutant_target(f"{part}.{exercise}", path, root)
    if path.is_dir():
        return submission_target(path, root)
    raise TargetError(
        f"--target {text!r}: expected 'exercises', 'solutions', 'mutant:<part>.<exercise>:<name>' "
        f"or an existing submission folder"
    )


def mutant_target(module: str, path: Path, root: Path) -> TargetSpec:
    if not path.is_file():
        raise TargetError(f"no mutant file at {path}")
    part, _, exercise = module.partition(".")
    return TargetSpec(
        name=f"mutant:{module}:{path.stem}", base=Path(root) / "solutions",
        overlays={module: path}, kind="mutant",
    )


def submission_tree(path: Path) -> Path:
    """The folder of a submission that holds ``partNN_*/module.py`` files."""
    return path / "exercises" if (path / "exercises").is_dir() else path


def submission_target(path: Path, root: Path) -> TargetSpec:
    tree = submission_tree(path)
    overlays = {}
    for file in sorted(tree.glob("part*/*.py")):
        if file.name != "__init__.py":
            overlays[f"{file.parent.name}.{file.stem}"] = file.resolve()
    return TargetSpec(name=str(path), base=Path(root) / "exercises", overlays=overlays, kind="submission")


class _OverlayFinder(importlib.abc.MetaPathFinder):
    """Resolves ``<package>.<part>.<module>`` to an overlay file when the target has one."""

    def __init__(self, package: str, overlays: dict[str, Path]):
        self.package = package
        self.overlays = {f"{package}.{k}": v for k, v in overlays.items()}

    def find_spec(self, fullname, path=None, target=None):  # noqa: D401 - importlib protocol
        file = self.overlays.get(fullname)
        if file is None:
            return None
        return importlib.util.spec_from_file_location(fullname, file)


def _short_traceback(exc: BaseException, limit: int = 3) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if "importlib" not in f.filename and "infralab" not in f.filename]
    return "".join(traceback.format_list(frames[-limit:])).rstrip()


class Implementation:
    """One module of the implementation under test; attribute access reaches its functions."""

    def __init__(self, module_name: str, module: types.ModuleType, origin: str, banned: tuple[str, ...] = (),
                 triton: bool = False, mutates: dict[str, dict[str, int]] | None = None,
                 own_kernel: Any = None):
        self._module_name = module_name
        self._module = module
        self._origin = origin
        self._banned = banned
        self._triton = triton  # every call must launch a Triton kernel (course.yml `triton: true`)
        self._mutates = mutates  # function -> {parameter: position} it may change; None: inputs unchecked
        self._own_kernel = own_kernel

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(self._module, name)
        except AttributeError:
            raise TargetError(
                f"{self._origin} has no `{name}`: define it with the signature given in the stub"
            ) from None
        allowed = None if self._mutates is None else self._mutates.get(name, {})
        return guarded(value, self._banned, f"{self._origin}: {name}", triton=self._triton, allowed=allowed,
                       own_kernel=self._own_kernel or (lambda file: True))

    def __repr__(self) -> str:
        return f"<implementation {self._module_name} from {self._origin}>"


class InProcessTarget:
    """Loads a target's modules into this process (real imports, real tracebacks, pdb works)."""

    def __init__(self, spec: TargetSpec, banned: dict[str, tuple[str, ...]] | None = None,
                 triton: set[str] | frozenset[str] = frozenset(),
                 mutates: dict[str, dict[str, dict[str, int]]] | None = None):
        self.spec = spec
        self.banned = banned or {}  # module -> banned op classes (course.yml `banned`)
        self.triton = triton  # modules whose calls must launch a Triton kernel (course.yml `triton`)
        # module -> function -> inputs it may change (course.yml `mutates`); None: inputs not checked
        # (timing code), else every call fails that changes any other input tensor
        self.mutates = mutates
        self.package = f"_infralab_target_{next(_counter)}"
        self._failures: dict[str, TargetError] = {}
        pkg = types.ModuleType(self.package)
        pkg.__path__ = [str(spec.base)]  # type: ignore[attr-defined]
        pkg.__package__ = self.package
        sys.modules[self.package] = pkg
        self._finder = _OverlayFinder(self.package, spec.overlays)
        sys.meta_path.insert(0, self._finder)

    def origin(self, module_name: str) -> str:
        file = self.spec.overlays.get(module_name)
        if file is None:
            file = self.spec.base / (module_name.replace(".", "/") + ".py")
        return str(file)

    def load(self, module_name: str) -> Implementation:
        if module_name in self._failures:
            raise self._failures[module_name]
        origin = self.origin(module_name)
        if not Path(origin).is_file():
            error = TargetError(f"{origin}: module file is missing")
            self._failures[module_name] = error
            raise error
        try:
            module = importlib.import_module(f"{self.package}.{module_name}")
        except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import, ...
            if isinstance(exc, KeyboardInterrupt):
                raise
            where = _short_traceback(exc)
            error = TargetError(
                f"{origin} does not import: {type(exc).__name__}: {exc}" + (f"\n{where}" if where else "")
            )
            self._failures[module_name] = error
            raise error from None
        return Implementation(module_name, module, origin, self.banned.get(module_name, ()),
                              triton=module_name in self.triton,
                              mutates=None if self.mutates is None else self.mutates.get(module_name, {}),
                              own_kernel=self.own_kernel)

    def own_kernel(self, file: str) -> bool:
        """Whether a kernel defined in ``file`` is the target's own (its tree, its overlays, a mutant's edit)."""
        path = Path(file)
        if any(path == Path(f) for f in self.spec.overlays.values()) or self.spec.base.resolve() in path.resolve().parents:
            return True
        return self.spec.kind == "mutant" and file.startswith("<mutant of ")

    def close(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        for name in [n for n in sys.modules if n == self.package or n.startswith(self.package + ".")]:
            del sys.modules[name]
