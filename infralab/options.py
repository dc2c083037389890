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
    """argparse's parser, whose errors are one line (``prog: message``) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {argparse_message(message)}", file=sys.stderr)
        sys.exit(2)


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
