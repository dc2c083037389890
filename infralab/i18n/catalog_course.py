"""Messages of course.yml's loading (infralab/course.py) and the frame of every
:class:`~infralab.errors.CourseError` ("file: key: expected ..., got ..."). Keys: ``course.*``."""

MESSAGES = {
    # --- the frame of a CourseError --------------------------------------------------------
    "course.error": ("{where}: expected {expected}", "{where}：应为 {expected}"),
    "course.error_got": ("{where}: expected {expected}, got {got!r}", "{where}：应为 {expected}，实际为 {got!r}"),
    # --- what a key of course.yml should hold ----------------------------------------------
    "course.a_mapping": ("a mapping", "一个映射（key: value）"),
    "course.one_of": ("one of {names}", "以下之一：{names}"),
    "course.key_present": ("this key to be present", "此键必须存在"),
    "course.non_empty_string": ("a non-empty string", "非空字符串"),
    "course.identifier": ("a lower-case identifier (letters, digits, _)", "小写标识符（字母、数字、_）"),
    "course.number_at_least": ("a number >= {minimum:g}", "不小于 {minimum:g} 的数"),
    "course.true_or_false": ("true or false", "true 或 false"),
    "course.a_list": ("a list", "一个列表"),
    "course.public_names": ("a non-empty list of public names", "非空的公开名称列表"),
    "course.module_file": ("a module file at {path}", "位于 {path} 的模块文件"),
    "course.test_file": ("an existing test file at {path}", "位于 {path} 的已有测试文件"),
    "course.hidden_only_mapping": (
        "a mapping of mutant name to the reason only hidden tests catch it",
        "从变异体名称到“为何只有隐藏测试能发现它”的原因的映射",
    ),
    "course.mutant_name": ("the name of a mutant in {folder}", "{folder} 中某个变异体的名称"),
    "course.mutates_mapping": ("a mapping {{function: [parameter, ...]}}", "映射 {{function: [parameter, ...]}}"),
    "course.perf_mapping": ("a mapping describing a performance challenge", "描述性能挑战的映射"),
    "course.registered_profile": ("a registered hardware profile ({profiles})", "已注册的硬件配置（{profiles}）"),
    "course.file_missing": ("a course.yml file", "course.yml 文件"),
    "course.part_id_once": ("a part id used once", "只出现一次的部分 id"),
    "course.exercise_id_once": ("an exercise id used once in its part", "在所属部分中只出现一次的练习 id"),
    "course.not_found": ("a course.yml in this folder or a parent", "本文件夹或其上级文件夹中的 course.yml"),
    "course.weights_positive": ("weights must sum to a positive number, got {weights}", "权重之和必须为正数，实际为 {weights}"),
}
