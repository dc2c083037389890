"""Every ``name=`` of a numerical check that is English prose exists in Chinese too.

``assert_close``/``assert_equal``/``check_tensor``/``assert_all_written`` show their ``name=`` to a
student ("NAME: 18 of 19 elements differ ..."). A name that is code or math ("logits", "k_cache",
"y = x Wᵀ", "rank {rank}", "int8 codes") reads the same in every language and stays a plain string;
a name that is prose ("row sums", f"inv_freq for {scaling}") is an ``(english, chinese)`` pair.

The rule (:func:`is_prose`): take the string's literal text (an f-string's ``{fields}`` dropped),
split it at whitespace, strip brackets and punctuation from each piece; a piece is an English word
when it is two or more lowercase ASCII letters (hyphens and a trailing 's allowed: "top-p",
"rank's") or the article "a". Anything with a digit, ``_``, ``.``, ``=``, ``|``, an upper-case letter
or non-ASCII (identifiers, shapes, dtypes, acronyms, Chinese) is a code-like token and not a word.
The text is prose when it has two or more words, or one English function word (of, for, with, the,
...: "inv_freq for {scaling}"). One word alone ("logits", "codes", "GAE advantages") is a term and
may stay English.

Where the scan looks (the files of test_labels_bilingual: the course's tests and infralab/mistakes):
the ``name=`` of every call, not only of the four checks
(a test's own helper, ``check(..., name="decode output")``, hands it on to them, and
``assert_draws_follow`` shows it too), and the default of a helper's ``name`` parameter. A name
formatted into a catalogue message (``tr(key, name=...)``, ``expect(..., name=...)``) is a field,
not a check's name: a prose one is written ``localized((english, chinese))``. A name built at run
time (a variable, a call) is not seen here. ``assert_same_tokens``' ``what=`` (infralab/engine_checks.py)
is the same thing under another keyword and is scanned too. An AST scan of about 80 files: well under a second.
"""
import ast
import re
from pathlib import Path

from tests.test_labels_bilingual import label_sources

ROOT = Path(__file__).resolve().parents[1]
FUNCTION_WORDS = {"a", "an", "the", "of", "for", "with", "without", "at", "on", "by", "from", "to",
                  "after", "before", "per", "over", "and", "or", "vs", "its", "not", "no"}
# a check's name under another keyword: infralab.engine_checks.assert_same_tokens(..., what=)
OTHER_NAMES = {("what", "assert_same_tokens")}
_WORD = re.compile(r"[a-z]{2,}(?:-[a-z]+)*(?:'s)?|a")


def english_words(text: str) -> list[str]:
    """The pieces of ``text`` that are English words (see the module's rule)."""
    pieces = (piece.strip("()[]{},:;'\"") for piece in text.split())
    return [piece for piece in pieces if _WORD.fullmatch(piece)]


def is_prose(text: str) -> bool:
    words = english_words(text)
    return len(words) >= 2 or any(word in FUNCTION_WORDS for word in words)


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"inv_freq for {scaling}": the fields are not words
        return "".join(v.value if isinstance(v, ast.Constant) else " " for v in node.values)
    return None


def english_only_names(path: Path, root: Path = ROOT) -> list[str]:
    """``path:line: text`` (path relative to ``root``) of each prose ``name=`` given as a plain string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call):  # check(...), assert_close(...), tr(...): every name= keyword
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            given = [k.value for k in node.keywords if k.arg == "name" or (k.arg, called) in OTHER_NAMES]
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)):  # def check(..., name="attention output")
            args = node.args
            given = [default for arg, default in [*zip(args.args[len(args.args) - len(args.defaults):], args.defaults),
                                                  *zip(args.kwonlyargs, args.kw_defaults)]
                     if arg.arg == "name" and default is not None]
        else:
            continue
        for value in given:
            text = _literal_text(value)
            if text is not None and is_prose(text):
                found.append(f"{path.relative_to(root)}:{value.lineno}: {ast.unparse(value)}")
    return found


def test_every_prose_name_is_an_english_chinese_pair():
    # the course's tests and the mistakes modules their checks call (check_attention(..., name=))
    found = [hit for path in label_sources(ROOT) for hit in english_only_names(path)]
    assert not found, (f"{len(found)} names are English prose (write name=(english, chinese); "
                       "see docs/authoring.md):\n" + "\n".join(found))


def test_the_rule_tells_prose_from_code():
    prose = ["row sums", "top-p logits with a tiny p", "inv_freq for {scaling}", "GAE advantages (hand table)",
             "rank 's output", "bound of  ", "fp8 round trip"]
    neutral = ["y = x Wᵀ", "logits", "o", "k_cache", "rank  ", "int8 codes", "GAE advantages", "x_mean (in,)",
               "rank_to_coords(3, tp=2 dp=2)", "top-5", "p=0.9", "行和", "max|X_j|"]
    assert [t for t in prose if not is_prose(t)] == []
    assert [t for t in neutral if is_prose(t)] == []


def test_the_scan_finds_each_kind_of_english_only_name(tmp_path):
    src = tmp_path / "case.py"
    src.write_text(
        'assert_close(y, e, name="row sums")\n'
        'testing.assert_equal(y, e, name=f"inv_freq for {scaling}")\n'
        'check_tensor(y, name="output with empty rows")\n'
        'assert_all_written(y, name="blocks of the cache")\n'
        'assert_close(y, e, name=("row sums", "行和"))\n'
        'assert_close(y, e, name="y = x Wᵀ")\n'
        'assert_close(y, e, name=f"rank {rank}")\n'
        'check(golden, y, name="decode output")\n'
        'def check(golden, y, name="attention output"):\n'
        '    raise Mismatch(tr("part02.cp.nan", name="output of fully masked rows", count=1))\n'
        'check(golden, y, name=("decode output", "decode 输出"))\n'
        'raise Mismatch(tr("part02.cp.nan", name=localized(("masked rows", "被掩码的行")), count=1))\n'
        'def check_y(golden, y, name="y = x Wᵀ", *, what="not a name here"):\n'
        '    pass\n'
        'assert_same_tokens(got, refs, what="greedy with preemption")\n'
        'assert_same_tokens(got, refs, what=("greedy with preemption", "有抢占时的贪心解码"))\n', encoding="utf-8")
    hits = english_only_names(src, tmp_path)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [1, 2, 3, 4, 8, 9, 10, 15], hits

