"""Messages of capstones built on other exercises (course.yml ``uses:``, ``--parts``). Keys: ``uses.*``."""

MESSAGES = {
    "uses.expected_exercise_id": (
        "the id of an exercise of this course, as <part>.<exercise>{hint}",
        "本课程某个练习的编号，形如 <part>.<exercise>{hint}",
    ),
    "uses.did_you_mean": ("; did you mean {name}?", "；是不是 {name}？"),
    "uses.expected_not_itself": (
        "another exercise than {exercise} itself",
        "{exercise} 以外的练习（不能使用自己）",
    ),
    "uses.expected_once": ("each exercise listed once", "每个练习只列一次"),
    "uses.expected_list": (
        "a non-empty list of exercise ids (<part>.<exercise>) whose modules this exercise imports",
        "非空的练习编号列表（<part>.<exercise>），即本练习导入的模块",
    ),
    "uses.expected_share": (
        "a number of points from 0 to the exercise's points ({points}): what the run with the reference parts wins",
        "0 到本练习分值（{points}）之间的分数：使用参考实现部件的那一轮可得的分",
    ),
    "uses.expected_no_share": (
        "0 or no reference_parts_points: course.yml says reference_parts: false (no run with the reference parts)",
        "0 或不写 reference_parts_points：course.yml 已设 reference_parts: false（不进行使用参考部件的评测）",
    ),
    "uses.expected_no_cycle": (
        "no cycle of exercises using each other, found {cycle}",
        "练习之间不能循环依赖，发现 {cycle}",
    ),
    "uses.expected_imports_listed": (
        "every course module that {file} imports relatively to be listed; missing: {modules}",
        "{file} 相对导入的每个课程模块都要列出；缺少：{modules}",
    ),
    "uses.no_reference": (
        "the reference parts: no reference module for {module} at {file} (a student release ships no "
        "solutions; the course team publishes the reference parts, or run with --parts own)",
        "参考部件：{module} 的参考实现 {file} 不存在（学生版不含参考解；请等课程组发布参考部件，或使用 --parts own）",
    ),
    "uses.bad_parts_option": (
        "--parts {value}: expected one of {choices}",
        "--parts {value}：应为以下之一：{choices}",
    ),
    "uses.option_help": (
        "a capstone (course.yml uses:) runs on the student's own parts (own, default) or on the reference "
        "parts it uses (reference); other exercises are not affected",
        "综合练习（course.yml uses:）使用学生自己的部件（own，默认）或参考实现的部件（reference）运行；其他练习不受影响",
    ),
    "uses.parts_own": ("own parts", "自己的部件"),
    "uses.parts_reference": ("reference parts", "参考部件"),
    "uses.whose_student": ("the student's", "学生的"),
    "uses.whose_reference": ("reference", "参考实现"),
    "uses.whose_stub": ("the stub (not submitted)", "桩代码（未提交）"),
    "uses.whose_mutant": ("a mutant", "变异体"),
    "uses.line": (
        "{exercise} with {parts}: {points}/{max_points} ({whose})",
        "{exercise}（使用{parts}）：{points}/{max_points} 分（部件来源：{whose}）",
    ),
    "uses.reference_note": (
        "the run with the reference parts had these solutions/ modules in the executor's tree: {modules}",
        "使用参考部件的评测在执行进程的文件树中放入了这些参考解模块：{modules}",
    ),
    "uses.reference_run_failed": (
        "the run with the reference parts failed ({error}): its score lines are 0",
        "使用参考部件的评测失败（{error}）：该轮得分记为 0",
    ),
}
