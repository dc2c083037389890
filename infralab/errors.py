"""Errors the kit reports to its users: always naming the file, the key and what was expected."""
from __future__ import annotations

from pathlib import Path


class InfralabError(Exception):
    """Base class: a problem in the user's input to the kit (not a bug in the kit)."""


class CourseError(InfralabError):
    """A broken course.yml or hardware profile: names the file, the key path and the expectation."""

    def __init__(self, file: Path | str, key: str, expected: str, got: object = None):
        self.file = str(file)
        self.key = key
        self.expected = expected
        self.got = got
        where = f"{self.file}: {key}" if key else self.file
        text = f"{where}: expected {expected}"
        if got is not None:
            text += f", got {got!r}"
        super().__init__(text)


class TargetError(InfralabError):
    """The implementation under test cannot be used: missing module, import failure, missing name."""
