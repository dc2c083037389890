"""What the judge needs to know about the course, as plain data (a one-way interface).

The pytest plugin builds a :class:`JudgeConfig` from the course and hands it to
:class:`infralab.judge.isolated.IsolatedTarget`; the judge imports nothing from the plugin.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JudgeConfig:
    course_root: Path  # hidden from the executor, with everything under it
    banned: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # exercise id -> banned torch routines
    triton: frozenset[str] = frozenset()  # exercise ids whose every call must launch a @triton.jit kernel
    # exercise id -> function -> {parameter: position}: the inputs a call may change (course.yml mutates:)
    mutates: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)

    @classmethod
    def from_course(cls, course: Any) -> "JudgeConfig":
        """From an :class:`infralab.course.Course` (duck-typed: the judge does not import the course model)."""
        return cls(course_root=Path(course.root),
                   banned={ex.id: tuple(ex.banned) for ex in course.exercises if ex.banned},
                   triton=frozenset(ex.id for ex in course.exercises if ex.triton),
                   mutates={ex.id: ex.may_change for ex in course.exercises if ex.may_change})

    def for_executor(self) -> dict:
        """The part the executor reads (JSON): the guards of each exercise and the inputs it may change."""
        return {"banned": {k: list(v) for k, v in sorted(self.banned.items())}, "triton": sorted(self.triton),
                "mutates": {k: {f: dict(p) for f, p in v.items()} for k, v in sorted(self.mutates.items())}}
