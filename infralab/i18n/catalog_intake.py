"""Messages of intake (what a submission holds), the grading outputs and the kit's input checks
(options, course.yml and hardware profile loading). Keys: ``intake.*``."""

MESSAGES = {
    # --- what a submission holds -------------------------------------------------------------
    "intake.not_module": ("not an exercise module", "不是练习模块"),
    "intake.not_module_pattern": ("not an exercise module (partNN_*/name.py)", "不是练习模块（应为 partNN_*/name.py）"),
    "intake.symlink": ("a symbolic link", "符号链接"),
    "intake.not_regular": ("not a regular file", "不是普通文件"),
    "intake.too_large": ("larger than {limit} bytes", "超过 {limit} 字节"),
    "intake.unsafe_zip_path": ("unsafe path in the zip", "zip 中的路径不安全"),
    "intake.shipped": ("shipped with the course (the course's own copy is used)", "课程自带的文件（使用课程自己的副本）"),
    "intake.did_you_mean": ("did you mean {name}?", "是不是应为 {name}？"),
    "intake.expected_one_of": ("expected one of: {names}", "应为以下之一：{names}"),
    "intake.misnamed": (
        "{name} is not an exercise module of {part}; {hint}",
        "{name} 不是 {part} 的练习模块；{hint}",
    ),
    "intake.unknown_part": (
        "{part} is not a part of the course; {hint}",
        "{part} 不是本课程的部分；{hint}",
    ),
    "intake.misnamed_anywhere": (
        "{path} is not an exercise module of the course; {hint}",
        "{path} 不是本课程的练习模块；{hint}",
    ),
    "intake.flat_taken": ("{name} (no folder) was taken as {rel}", "{name}（没有文件夹）按 {rel} 处理"),
    "intake.ambiguous": (
        "{name} (no folder) is an exercise module of several parts ({parts}): put it in its part's folder, "
        "e.g. {example}",
        "{name}（没有文件夹）是多个部分（{parts}）的练习模块：请放进对应部分的文件夹，例如 {example}",
    ),
    "intake.duplicate": ("a second copy of {rel}; the first one was taken", "{rel} 的第二个副本；已采用第一个"),
    "intake.empty": ("{source} holds no file: nothing was graded", "{source} 中没有任何文件：未评分"),
    "intake.unreadable": (
        "{source} could not be read ({error}): nothing was graded; ask for a new upload",
        "无法读取 {source}（{error}）：未评分；请学生重新上传",
    ),
    "intake.not_graded": ("not graded: {reason}", "未评分：{reason}"),
    "intake.not_submission": (
        "{path}: expected a submission folder, a .zip, or a class folder of those",
        "{path}：应为提交文件夹、.zip 文件，或包含它们的班级文件夹",
    ),
    "intake.empty_folder": (
        "{path}: an empty folder; expected submissions (folders or .zip files) or a student's exercises/",
        "{path}：空文件夹；应包含提交（文件夹或 .zip）或学生的 exercises/",
    ),
    "intake.skipped_results": (
        "skipped {path}: a results folder of infralab grade, not a submission",
        "已跳过 {path}：这是 infralab grade 的结果文件夹，不是提交",
    ),
    "intake.no_submissions": ("no submissions found in {paths}", "在 {paths} 中没有找到提交"),
    "intake.simulated_group": (
        "{module}: the ranks ran on the simulated group inside the cage (the test asked for {backend}; "
        "the cage has no network)",
        "{module}：各 rank 在沙箱内的模拟进程组上运行（测试要求 {backend}；沙箱没有网络）",
    ),
    # --- grading outputs ---------------------------------------------------------------------
    "intake.out_not_folder": (
        "--out {path}: expected a folder (or a path to create one), got an existing file",
        "--out {path}：应为文件夹（或要新建的路径），但这是一个已有的文件",
    ),
    "intake.out_is_submission": (
        "--out {path}: expected a results folder, got a folder holding submissions or course files",
        "--out {path}：应为结果文件夹，但其中有提交或课程文件",
    ),
    "intake.need_submissions": (
        "give the submissions and --out (or --notebooks SUBMITTED_DIR)",
        "请给出提交和 --out（或 --notebooks SUBMITTED_DIR）",
    ),
    "intake.graded_line": ("graded {student}: {points}/{max_points}", "已评分 {student}：{points}/{max_points}"),
    "intake.validated_line": ("validated {exercise}: {verdict}", "已验证 {exercise}：{verdict}"),
    "intake.outputs_in": (
        "outputs in {out}/ (gradebook.csv, <student>/results.json, junit.xml, feedback.html); "
        "{count} students in the gradebook",
        "输出在 {out}/（gradebook.csv、<student>/results.json、junit.xml、feedback.html）；成绩册共 {count} 名学生",
    ),
    "intake.details": ("details", "详情"),
    "intake.grades": ("grades", "成绩"),
    "intake.validating": ("validating", "验证中"),
    "intake.submission_heading": ("Your submission", "你的提交"),
    "intake.notes_heading": ("Notes", "说明"),
    "intake.flags_heading": ("Flags for the instructor", "给教师的提示"),
    "intake.parts_shown": (
        "points per part (the table is too wide for one column per exercise: gradebook.csv has them)",
        "按部分显示分数（表格太宽，无法每个练习一列：见 gradebook.csv）",
    ),
    # --- options and the kit's input files -----------------------------------------------------
    "intake.expected_int_at_least": ("expected a whole number >= {minimum}, got {value!r}",
                                     "应为 >= {minimum} 的整数，实际为 {value!r}"),
    "intake.expected_number_above": ("expected a number > {minimum}, got {value!r}",
                                     "应为 > {minimum} 的数，实际为 {value!r}"),
    "intake.unknown_selection": (
        "{option} {value}: not {what} of the course; {hint}",
        "{option} {value}：不是本课程的{what}；{hint}",
    ),
    "intake.what_part": ("a part", "部分"),
    "intake.what_exercise": ("an exercise", "练习"),
    "intake.nothing_selected": ("--part {parts} --exercise {exercises}: no exercise is in both",
                                "--part {parts} --exercise {exercises}：没有同时满足两者的练习"),
    "intake.yaml_not_utf8": (
        "UTF-8 text at line {line}, column {column} (byte {byte} cannot be decoded; save the file as UTF-8)",
        "第 {line} 行第 {column} 列处的 UTF-8 文本（字节 {byte} 无法解码；请以 UTF-8 保存该文件）",
    ),
    "intake.yaml_binary": ("text at line {line}, column {column} (a control character {byte})",
                           "第 {line} 行第 {column} 列处的文本（控制字符 {byte}）"),
    "intake.yaml_syntax": ("valid YAML at line {line}, column {column} ({problem})",
                           "第 {line} 行第 {column} 列处的合法 YAML（{problem}）"),
    "intake.yaml_unreadable": ("a readable file ({error})", "可读取的文件（{error}）"),
    "intake.ray_missing": ("--backend ray needs Ray: pip install 'infralab[ray]'", "--backend ray 需要 Ray：pip install 'infralab[ray]'"),
    "intake.ray_not_started": ("Ray did not start: {error}", "Ray 未能启动：{error}"),
}
