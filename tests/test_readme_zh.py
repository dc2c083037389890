"""The README's 中文 section covers what its English sections do: every `infralab` command (and
sub-command), every `make` target, every option (`--seed`, `-m`, ...) named in English is named
in Chinese too."""
import re
from pathlib import Path

from infralab.cli import COMMANDS

README = Path(__file__).resolve().parents[1] / "README.md"
ZH_HEADING = "## 中文说明"
GROUPS = {"nbgrader", "profile"}  # commands whose next word is a sub-command
_COMMAND = re.compile(r"\binfralab\s+(?:--lang\s+\w+\s+)?([a-z][\w-]*)(?:\s+([a-z][\w|-]*))?")
_MAKE = re.compile(r"\bmake\s+([a-z][\w-]*)")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b")


def readme_halves(text: str) -> tuple[str, str]:
    english, found, chinese = text.partition(ZH_HEADING)
    assert found, f"README.md has no '{ZH_HEADING}' section"
    return english, chinese


def mentions(text: str) -> set[str]:
    """The commands, make targets and options a README text names."""
    found: set[str] = set()
    for cmd, sub in _COMMAND.findall(text):
        if cmd not in COMMANDS:
            continue
        found.add(f"infralab {cmd}")
        if cmd in GROUPS and sub:
            found |= {f"infralab {cmd} {s}" for s in sub.split("|") if s}
    found |= {f"make {t}" for t in _MAKE.findall(text)}
    found |= set(_OPTION.findall(text))
    return found


def test_mentions_reads_commands_subcommands_targets_and_options():
    text = ("`infralab --lang zh check --seed 3`, `infralab profile show|detect`, `infralab nbgrader export "
            "--out x`, make lab, pytest -m rope; top-p and fp32-accumulation are not options")
    assert mentions(text) == {"infralab check", "infralab profile", "infralab profile show",
                              "infralab profile detect", "infralab nbgrader", "infralab nbgrader export",
                              "make lab", "--lang", "--seed", "--out", "-m"}


def test_the_chinese_section_names_every_command_and_option_of_the_english_one():
    english, chinese = readme_halves(README.read_text(encoding="utf-8"))
    missing = sorted(mentions(english) - mentions(chinese))
    assert not missing, f"README.md's {ZH_HEADING} section does not mention: {', '.join(missing)}"
