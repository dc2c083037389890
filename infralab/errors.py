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
        from infralab.i18n import tr

        where = f"{self.file}: {key}" if key else self.file
        if got is None:
            super().__init__(tr("course.error", where=where, expected=expected))
        else:
            super().__init__(tr("course.error_got", where=where, expected=expected, got=got))


class TargetError(InfralabError):
    """The implementation under test cannot be used: missing module, import failure, missing name."""
