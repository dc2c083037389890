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
may stay English. A name built at run time (a variable, a call) is not seen here. An AST scan of
about 80 files: well under a second.
"""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = {"assert_close", "assert_equal", "check_tensor", "assert_all_written"}
FUNCTION_WORDS = {"a", "an", "the", "of", "for", "with", "without", "at", "on", "by", "from", "to",
                  "after", "before", "per", "over", "and", "or", "vs", "its", "not", "no"}
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
        if not isinstance(node, ast.Call):
            continue
        called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if called not in CHECKS:
            continue
        for keyword in node.keywords:
            text = _literal_text(keyword.value) if keyword.arg == "name" else None
            if text is not None and is_prose(text):
                found.append(f"{path.relative_to(root)}:{keyword.value.lineno}: {ast.unparse(keyword.value)}")
    return found


def course_test_files(root: Path) -> list[Path]:
    return sorted([*root.glob("graders/*/*.py"), *root.glob("exercises/*/tests/*.py")])


def test_every_prose_name_is_an_english_chinese_pair():
    sources = course_test_files(ROOT)
    assert len(sources) > 50, "the scan found too few test files: the globs are wrong"
    found = [hit for path in sources for hit in english_only_names(path)]
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
        'other(y, name="row sums")\n', encoding="utf-8")
    hits = english_only_names(src, tmp_path)
    assert sorted(int(hit.split(":")[1]) for hit in hits) == [1, 2, 3, 4], hits

