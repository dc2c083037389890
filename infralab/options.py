"""Option types shared by every command: a bad value is one line naming the option, before anything runs.

``type=positive_int`` on an argparse option makes ``--jobs 0`` fail at parse time with
``infralab grade: argument --jobs: expected a whole number >= 1, got '0'`` and exit status 2
(the CLI's parser prints one line, no usage block: :class:`OneLineParser`).
"""
from __future__ import annotations

import argparse
import math
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
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)
