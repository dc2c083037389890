"""Flags: what the judge records for the instructor, from one table of known kinds.

The kinds are the ``integrity.flag.<kind>`` keys of the message catalogue
(:mod:`infralab.i18n.catalog_integrity`), each with its English and Chinese description. A
:class:`FlagLog` keeps the flags of one implementation under test: it accepts only known kinds
(an unknown one, or one only the judge records arriving from the executor, as a forged flag
would, is kept as ``flag-forged`` with its name quoted), cleans the detail to one printable line, drops exact repeats, and keeps at most
:data:`CAP_PER_KIND` flags of each kind (the rest are counted in one ``flags-capped`` flag), so
that no kind can crowd another out of the record.
"""
from __future__ import annotations

from infralab.i18n import catalog, tr

PREFIX = "integrity.flag."
CAP_PER_KIND = 20
MAX_DETAIL = 300
# kinds only the judge itself records: the same kind from the executor's channel is a forgery
JUDGE_ONLY = frozenset({"grading-error", "ignored-file", "timeout", "executor-died", "output",
                        "suspicious-source", "flag-channel", "flag-forged", "flags-capped",
                        "misnamed-module", "ambiguous-module", "unreadable-submission", "empty-submission"})


def known_kinds() -> frozenset[str]:
    return frozenset(k[len(PREFIX):] for k in catalog() if k.startswith(PREFIX))


def describe(kind: str, lang: str | None = None) -> str:
    """What a flag kind means, in the language asked for."""
    return tr(PREFIX + kind, lang)


def _clean(text: object, limit: int = MAX_DETAIL) -> str:
    text = "".join(c if c.isprintable() else " " for c in str(text))
    return text[:limit]


class FlagLog:
    def __init__(self) -> None:
        self.flags: list[dict] = []
        self._counts: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self._kinds = known_kinds()

    def add(self, kind: object, detail: object, source: str, from_executor: bool = False) -> None:
        """Record a flag; ``from_executor``: it came over the executor's channel (judge-only kinds refused)."""
        if type(kind) is not str or kind not in self._kinds or (from_executor and kind in JUDGE_ONLY):
            kind, detail = "flag-forged", f"unknown kind {_clean(repr(kind), 60)}: {_clean(detail, 200)}"
        entry = {"kind": kind, "detail": _clean(detail), "source": source}
        if entry in self.flags:
            return
        if self._counts.get(kind, 0) >= CAP_PER_KIND:
            self._dropped[kind] = self._dropped.get(kind, 0) + 1
            return
        self._counts[kind] = self._counts.get(kind, 0) + 1
        self.flags.append(entry)

    def finished(self) -> list[dict]:
        """The flags, with one ``flags-capped`` entry per kind that went over the cap."""
        capped = [{"kind": "flags-capped", "detail": f"{kind}: {n} more not kept", "source": "judge"}
                  for kind, n in sorted(self._dropped.items())]
        return self.flags + [c for c in capped if c not in self.flags]
