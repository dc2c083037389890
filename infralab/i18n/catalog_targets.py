"""Messages about the implementation under test (infralab/targets.py in-process, the isolated
judge's infralab/judge/isolated.py): ``--target`` values, a module that is missing or does not
import, a missing function. Keys: ``targets.*``."""

MESSAGES = {
    "targets.no_stub": ("--target {target!r}: no stub at {stub}", "--target {target!r}：{stub} 处没有存根文件"),
    "targets.mutant_syntax": (
        "--target {target!r}: expected mutant:<part>.<exercise>:<name>",
        "--target {target!r}：应为 mutant:<part>.<exercise>:<name>",
    ),
    "targets.unknown": (
        "--target {target!r}: expected 'exercises', 'solutions', 'mutant:<part>.<exercise>:<name>' "
        "or an existing submission folder",
        "--target {target!r}：应为 'exercises'、'solutions'、'mutant:<part>.<exercise>:<name>' 或一个已存在的提交文件夹",
    ),
    "targets.no_mutant_file": ("no mutant file at {path}", "{path} 处没有变异体文件"),
    "targets.missing_name": (
        "{origin} has no `{name}`: define it with the signature given in the stub",
        "{origin} 中没有 `{name}`：请按存根中给出的签名定义它",
    ),
    "targets.module_missing": ("{origin}: module file is missing", "{origin}：模块文件不存在"),
    "targets.does_not_import": ("{origin} does not import: {error}", "{origin} 无法导入：{error}"),
}
