"""Option types shared by every command: a bad value is one line naming the option, before anything runs.

``type=positive_int`` on an argparse option makes ``--jobs 0`` fail at parse time with
``infralab grade: argument --jobs: expected a whole number >= 1, got '0'`` and exit status 2
(the CLI's parser prints one line, no usage block: :class:`OneLineParser`).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import unicodedata
from collections.abc import Callable

from infralab.i18n import tr


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(tr("intake.expected_int_at_least", minimum=minimum, value=text)) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(tr("intake.expected_int_at_least", minimum=minimum, value=text))
        return value
    parse.__name__ = f"whole number >= {minimum}"
    return parse


def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0 (seconds, GiB)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(tr("intake.expected_number_above", minimum=0, value=text))
    return value


def require_positive(option: str, value: float) -> None:
    """The rule of :func:`positive_number` for values that did not come through argparse."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        from infralab.errors import InfralabError
        raise InfralabError(tr("core.option_error", option=option,
                               problem=tr("intake.expected_number_above", minimum=0, value=str(value))))


positive_int = whole_number(1)  # --jobs
seed_int = whole_number(0)  # --seed: numpy and hypothesis take non-negative seeds


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line (``prog: message``) and exit status 2, and whose
    help page (argparse's own words too: usage, the section titles, ``-h``) is in the run's language."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("formatter_class", _HelpFormatter)
        add_help = kwargs.pop("add_help", True)
        super().__init__(*args, add_help=False, **kwargs)
        self._positionals.title = tr("help.argparse.positionals")
        self._optionals.title = tr("help.argparse.options")
        if add_help:
            self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS, help=tr("help.argparse.help"))

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {argparse_message(message)}", file=sys.stderr)
        sys.exit(2)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout with the catalogue's ``usage:``, wrapping Chinese by its display width
    (a Chinese character takes two columns; argparse counts one, and breaks only at spaces)."""

    def add_usage(self, usage, actions, groups, prefix=None):  # type: ignore[no-untyped-def]
        super().add_usage(usage, actions, groups, tr("help.argparse.usage") if prefix is None else prefix)

    def _split_lines(self, text: str, width: int) -> list[str]:
        if not _WIDE.search(text):
            return super()._split_lines(text, width)
        return wrap_columns(text, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if not _WIDE.search(text):
            return super()._fill_text(text, width, indent)
        return "\n".join(indent + line for line in wrap_columns(text, width - len(indent)))


_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")
_PIECES = re.compile(r"\s+|[^\s]")
_OPENING = "（《“‘【「"  # never last on a line
_CLOSING = "，。；：、！？）》”’】」"  # never first on a line


def _columns(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap_columns(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal columns: a line breaks at a space or between
    two Chinese characters, never inside a Latin word (a word longer than a line stands alone)."""
    words: list[str] = []  # a Latin word, a space, or one wide character (with the punctuation it holds)
    for piece in _PIECES.findall(" ".join(text.split())):
        joins = words and words[-1] != " " and (
            piece in _CLOSING or words[-1][-1] in _OPENING
            or not (piece == " " or _WIDE.match(piece) or _WIDE.match(words[-1][-1])))
        if joins:
            words[-1] += piece
        else:
            words.append(piece)
    lines, line = [], ""
    for word in words:
        if line and _columns(line + word) > width and word != " ":
            lines.append(line.rstrip())
            line = ""
        if word != " " or line:
            line += word
    return [*lines, line.rstrip()] if line.strip() else lines


# argparse's own error texts (English, from its gettext calls) -> catalogue keys, fields by name
_ARGPARSE = [(re.compile(pattern, re.S), key) for pattern, key in (
    (r"argument (?P<option>[^:]+): (?P<problem>.*)", "core.argparse_argument"),
    (r"invalid choice: (?P<value>.*) \(choose from (?P<choices>.*)\)", "core.argparse_invalid_choice"),
    (r"invalid (?P<type>\S+) value: (?P<value>.*)", "core.argparse_invalid_value"),
    (r"the following arguments are required: (?P<names>.*)", "core.argparse_required"),
    (r"unrecognized arguments: (?P<names>.*)", "core.argparse_unrecognized"),
    (r"expected one argument", "core.argparse_one_argument"),
    (r"one of the arguments (?P<names>.*) is required", "core.argparse_one_of_required"),
    (r"not allowed with argument (?P<option>.*)", "core.argparse_not_allowed_with"),
    (r"ambiguous option: (?P<option>\S+) could match (?P<matches>.*)", "core.argparse_ambiguous"),
)]


def argparse_message(message: str) -> str:
    """argparse's error ``message`` in the run's language (the problem inside ``argument X: ...`` too);
    a text it does not know is returned as is."""
    for pattern, key in _ARGPARSE:
        found = pattern.fullmatch(message)
        if found:
            fields = found.groupdict()
            if "problem" in fields:
                fields["problem"] = argparse_message(fields["problem"])
            return tr(key, **fields)
    return message
