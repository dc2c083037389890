"""``infralab validate --mutate`` on the mini course: mutants are generated, run and killed (by a
failure, a timeout, a crash), survivors are reported with their diff, the reviewed equivalent list is
honoured and a stale entry is flagged."""
from __future__ import annotations

import json
import textwrap

from infralab.cli import main
from infralab.mutants_ast import generate

# `double` with a loop (deleting `n += 1` hangs), a crash behind a condition (negating it kills the
# test process) and a default nothing reads (its mutants survive: one is reviewed equivalent).
SOLUTION = '''
import os


def double(x, unused=1):
    """Return 2 * x."""
    n = 0
    while n < 2:
        n += 1
    if n > 7:
        os._exit(3)
    return n * x
'''


def test_operators_edit_one_site_and_keep_the_line_count():
    source = textwrap.dedent(SOLUTION)
    mutants = generate(source)
    changes = {(m.operator, m.change) for m in mutants}
    for expected in [("compare", "< -> <="), ("compare", "> -> >="), ("arith", "+ -> -"), ("arith", "* -> /"),
                     ("default", "1 -> 2"), ("negate", "n > 7 -> not (n > 7)"), ("delete", "n += 1 -> pass"),
                     ("return", "n * x -> None"), ("constant", "7 -> 8")]:
        assert expected in changes, f"no {expected} among {sorted(changes)}"
    assert len({m.id for m in mutants}) == len(mutants)
    assert generate(source) == mutants, "the same source must give the same mutants (ids are stable)"
    for m in mutants:
        assert m.source.count("\n") == source.count("\n"), f"{m.id} changed the line count"
        assert [i for i, (a, b) in enumerate(zip(source.splitlines(), m.source.splitlines())) if a != b] == [m.line - 1]
    assert not any(m.line == 6 for m in mutants), "the docstring was mutated"


def test_validate_mutate_kills_reports_survivors_and_honours_the_equivalent_list(mini_course, capsys):
    source = textwrap.dedent(SOLUTION).lstrip("\n")
    (mini_course / "solutions/part01_demo/double.py").write_text(source, encoding="utf-8")
    by_change = {(m.operator, m.change): m for m in generate(source)}
    equivalent, unmarked = by_change[("default", "1 -> 2")], by_change[("default", "1 -> 0")]
    stale = by_change[("constant", "7 -> 8")]
    (mini_course / "equivalent.yml").write_text(textwrap.dedent(f"""
        - exercise: part01_demo.double
          mutant: "{equivalent.id}"
          line: "def double(x, unused=1):"
          reason: nothing reads unused
        - exercise: part01_demo.double
          mutant: "{stale.id}"
          line: "if n > 6:"
          reason: the line changed since this review
        """), encoding="utf-8")
    reports = mini_course / "reports"
    code = main(["validate", "--mutate", "--course", str(mini_course), "--exercise", "part01_demo.double",
                 "--mutant-timeout", "1", "--equivalents", str(mini_course / "equivalent.yml"),
                 "--report-dir", str(reports)])
    out = capsys.readouterr().out
    assert code == 1, out  # survivors and a stale entry
    data = json.loads((reports / "part01_demo.double.json").read_text(encoding="utf-8"))
    assert data["tested"] == data["generated"] == len(by_change) > 10
    assert data["timeouts"] >= 1, "deleting `n += 1` hangs: the per-test timeout kills it"
    statuses = {o["mutant"]: o["status"] for o in data["outcomes"]}  # the mutants not killed
    # negating `if n > 7` exits the test process, and the run goes on to every other one (tested == generated
    # above). Which mutant the crash is blamed on is not asserted: under a loaded make test (xdist beside the
    # soundness sweep) the tool twice blamed no mutant and reported the crashing one as a survivor; a known bug
    # of validate --mutate's crash attribution, open (closing note of 2026-12-03).
    assert statuses[equivalent.id] == "equivalent"
    assert statuses[unmarked.id] == "survived"
    assert statuses[stale.id] == "survived", "a stale entry is not honoured"
    exit_line = source.splitlines().index("        os._exit(3)") + 1  # no test runs it: unreached, not a hole
    on_exit = [m.id for m in by_change.values() if m.line == exit_line]
    assert on_exit and all(statuses[i] == "unreached" for i in on_exit), statuses
    assert data["unreached"] == len(on_exit) and data["survivors"] == sum(v == "survived" for v in statuses.values())
    assert data["killed"] == data["tested"] - len(data["outcomes"])
    assert 0 < data["kill_rate"] < 1
    page = (reports / "part01_demo.double.md").read_text(encoding="utf-8")
    assert "-def double(x, unused=1):\n+def double(x, unused=0):" in page, "the survivor's diff"
    assert stale.id in page and "if n > 6:" in page, "the stale entry is flagged"
    assert "part01_demo.double" in (reports / "README.md").read_text(encoding="utf-8")
    assert page.index("## Not reached") < page.index(on_exit[0]), "the unreached mutants are listed apart"
    assert unmarked.id in out


def test_a_mutant_is_reached_when_any_line_of_its_statement_ran():
    """A constant inside a multi-line literal runs under the literal's first line (constants fold), and a
    decorator's arguments run with its definition: the statement decides, not the edited line."""
    from infralab.mutate_reach import reached, statement_lines
    source = textwrap.dedent('''
        import functools
        TILES = [
            (128, 256),
            (64, 32),
        ]


        @functools.lru_cache(maxsize=3)
        def f(x):
            if x:
                return 1
            return 2
        ''').lstrip("\n")
    assert statement_lines(source, 3, 13) == range(2, 6)            # inside the literal: the assignment
    assert reached(source, 3, 13, {2}) and not reached(source, 3, 13, {1, 8})
    assert statement_lines(source, 8, 30) == range(8, 13)           # a decorator's argument: the definition
    assert statement_lines(source, 11, 15) == range(11, 12)         # `return 1` alone
    assert not reached(source, 11, 15, {8, 9, 10, 12})


def test_a_malformed_equivalent_list_is_one_clear_line(mini_course, capsys):
    bad = mini_course / "equivalent.yml"
    bad.write_text("- exercise: part01_demo.double\n  mutant: x\n", encoding="utf-8")
    code = main(["validate", "--mutate", "--course", str(mini_course), "--equivalents", str(bad), "--no-report"])
    err = capsys.readouterr().err
    assert code == 2
    assert str(bad) in err and "entry 0" in err and "reason" in err and "Traceback" not in err


def test_code_the_stub_gives_verbatim_is_given_and_nothing_the_student_writes_is():
    """Defaults of a signature the stub declares the same, dataclass fields, constants and a helper the
    stub implements in full are given; a body the student writes, a signature the stub declares
    otherwise and a constant the stub does not have are not."""
    from infralab.mutate_given import is_given
    stub = textwrap.dedent('''
        from dataclasses import dataclass
        LIMIT = 8


        @dataclass
        class Params:
            top_k: int = 0


        def helper(x):
            return x + 1


        def solve(x, scale=2.0, *, bias=0):
            """Spec."""
            raise NotImplementedError


        def other(x, y=1):
            raise NotImplementedError
        ''').lstrip("\n")
    reference = (stub.replace("LIMIT = 8\n", "LIMIT = 8  # a comment changes nothing\nTILE = 64\n")
                 .replace('    """Spec."""\n    raise NotImplementedError', "    return helper(x) * scale + bias")
                 .replace("def other(x, y=1):\n    raise NotImplementedError", "def other(x, y=2):\n    return x + y"))
    lines = reference.splitlines()

    def at(line_text: str, token: str, occurrence: int = 0) -> tuple[int, int]:
        row = next(i for i, text in enumerate(lines) if text.startswith(line_text) or text.strip() == line_text)
        col = -1
        for _ in range(occurrence + 1):
            col = lines[row].index(token, col + 1)
        return row + 1, col

    given = [at("LIMIT = 8", "8"), at("top_k: int = 0", "0"), at("return x + 1", "+"),
             at("def solve", "2.0"), at("def solve", "0")]
    written = [at("TILE = 64", "64"), at("return helper(x) * scale + bias", "*"), at("def other", "2")]
    assert all(is_given(reference, stub, *p) for p in given), [p for p in given if not is_given(reference, stub, *p)]
    assert not any(is_given(reference, stub, *p) for p in written)
    assert not is_given(reference, "this is not python (", *given[0])  # an unparsable stub gives nothing
