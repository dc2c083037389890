"""Every known-mistake label a student can read exists in English and Chinese.

A label (infralab.testing.Label) is English text or an ``(english, chinese)`` pair; only the pair
reaches a ``--lang zh`` run in Chinese. This scans the source of every test and mistakes module
(visible tests, hidden tests, infralab/mistakes) for a plain string literal where a label goes: a
key of a dict literal or comprehension, a subscript assigned to (``out["..."] = ...``), the
diagnosis of ``Mismatch(message, diagnosis)`` or of a ``diagnosis=`` argument, a module-level
UPPER_CASE constant (a label named once and used by several tests). Labels are sentences, so a
string without a space (a config or state-dict key, MODULE) is not one. A label that reaches a
check through other variables (a parametrize table, a list of pairs) is not seen here.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def label_sources(root: Path) -> list[Path]:
    return sorted([*root.glob("graders/*/*.py"), *root.glob("exercises/*/tests/*.py"),
                   *root.glob("infralab/mistakes/**/*.py")])


def _label_positions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
            yield node.value
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            yield from (k for k in node.keys if k is not None)
        elif isinstance(node, ast.DictComp):
            yield node.key
        elif isinstance(node, ast.Assign):
            yield from (t.slice for t in node.targets if isinstance(t, ast.Subscript))
        elif isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if called == "Mismatch" and len(node.args) > 1:
                yield node.args[1]
            yield from (k.value for k in node.keywords if k.arg == "diagnosis")


def english_only_labels(path: Path, root: Path = ROOT) -> list[str]:
    """``path:line: text`` (path relative to ``root``) of each plain-string label in the file."""
    found = []
    positions = list(_label_positions(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    while any(isinstance(node, ast.IfExp) for node in positions):  # LABEL if looks_like_it else None
        positions = [branch for node in positions
                     for branch in ((node.body, node.orelse) if isinstance(node, ast.IfExp) else (node,))]
    for node in positions:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = ast.unparse(node)
        else:
            continue
        if " " in text:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {text}")
    return found


def test_every_mistake_label_is_an_english_chinese_pair():
    sources = label_sources(ROOT)
    assert len(sources) > 50, "the scan found too few test files: the globs are wrong"
    found = [hit for path in sources for hit in english_only_labels(path)]
    assert not found, ("labels without Chinese (write them as (english, chinese)):\n" + "\n".join(found))


def test_the_scan_finds_each_kind_of_english_only_label(tmp_path):
    src = tmp_path / "case.py"
    src.write_text(
        'a = assert_close(x, y, mistakes={"kept k - 1 tokens": z, ("pair ok", "成对"): z, "cfg_key": 1})\n'
        'out["scale inverted here"] = z\n'
        'out[f"window off by {n} keys"] = z\n'
        'raise Mismatch("message", "looks like a mistake" if close else None)\n'
        'assert_all_written(o, diagnosis="an empty split")\n'
        'wrong = {f"the splits were averaged ({b})": z for b in bs}\n'
        'UNWRITTEN = "blocks never written"\nMODULE = "part00.x"\nPAIR = ("a b", "甲 乙")\n', encoding="utf-8")
    hits = english_only_labels(src, tmp_path)
    assert sorted(hit.split(":")[1] for hit in hits) == ["1", "2", "3", "4", "5", "6", "7"], hits
