"""The CLI's help: the command list, each parser's ``description`` and every option's ``help``
(``infralab --help``, ``infralab grade --help``, ... and the pytest plugin's options in
``pytest --help``). Rendered when the parser is built, so in the run's language. Keys: ``help.*``
(``help.<command>.<option>``; ``help.common.*`` for a text several commands share).

argparse %-formats every option's help (``%(default)s``): a literal percent sign is written ``%%``.
"""

MESSAGES = {
    # argparse's own words on every help page (infralab.options.OneLineParser)
    "help.argparse.usage": ("usage: ", "用法："),
    "help.argparse.positionals": ("positional arguments", "位置参数"),
    "help.argparse.options": ("options", "选项"),
    "help.argparse.help": ("show this help message and exit", "显示此帮助信息并退出"),
    # infralab --help: the program and its commands
    "help.cli.description": ("infralab: LLM-infrastructure course kit", "infralab：大模型基础设施课程工具包"),
    "help.cli.lang": (
        "language of every message: zh or en (default: INFRALAB_LANG, course.yml language:, the locale); "
        "exported to the pytest runs and the judge",
        "所有消息的语言：zh 或 en（默认依次取 INFRALAB_LANG、course.yml 的 language:、系统区域设置）；"
        "会传给 pytest 运行和评测器",
    ),
    "help.command.check": ("run the tests of your exercises and show your progress", "运行你的练习的测试并显示进度"),
    "help.command.validate": (
        "prove every exercise's tests sound (solution passes, stub and mutants fail)",
        "证明每个练习的测试可靠（参考解通过，桩代码和变异体失败）",
    ),
    "help.command.grade": (
        "grade submissions (folders, zips, a class) with the hidden tests, in isolation",
        "用隐藏测试在隔离环境中评分提交（文件夹、zip、整个班级）",
    ),
    "help.command.release": (
        "write the student version of the course (no solutions, no hidden tests)",
        "生成课程的学生版（不含参考解和隐藏测试）",
    ),
    "help.command.bench": (
        "run an exercise's GPU performance challenge against your card's profile",
        "按你的显卡的性能档案运行练习的 GPU 性能挑战",
    ),
    "help.command.leaderboard": (
        "rank the GPU performance figures of result records, per hardware profile",
        "按硬件档案对结果记录中的 GPU 性能数据排名",
    ),
    "help.command.profile": (
        "hardware profiles: show, detect this GPU, calibrate a new card",
        "硬件档案：查看、识别本机 GPU、校准新显卡",
    ),
    "help.command.gradescope": (
        "build the Gradescope autograder zip (setup.sh, run_autograder, hidden tests)",
        "构建 Gradescope 自动评分 zip（setup.sh、run_autograder、隐藏测试）",
    ),
    "help.command.nbgrader": (
        "export the course as nbgrader notebooks; grade submitted notebooks securely",
        "把课程导出为 nbgrader 笔记本；安全地评分提交的笔记本",
    ),
    # texts several commands share
    "help.common.target": (
        "exercises (default), solutions, a submission folder, or mutant:<part>.<exercise>:<name>",
        "exercises（默认）、solutions、一个提交文件夹，或 mutant:<part>.<exercise>:<name>",
    ),
    "help.common.part": ("only this part (repeatable)", "只运行这一部分（可重复）"),
    "help.common.hidden": ("also run the hidden tests (needs graders/)", "同时运行隐藏测试（需要 graders/）"),
    "help.common.course": (
        "course root (default: found from the current folder)",
        "课程根目录（默认：从当前文件夹向上查找）",
    ),
    "help.common.grade_part": ("grade only this part (repeatable)", "只评分这一部分（可重复）"),
    "help.common.grade_exercise": ("grade only this exercise (repeatable)", "只评分这个练习（可重复）"),
    # infralab check
    "help.check.exercise": (
        "only this exercise, e.g. rope or part01_transformer.rope",
        "只运行这个练习，例如 rope 或 part01_transformer.rope",
    ),
    "help.check.json": ("print the result record as JSON instead of a table", "以 JSON 输出结果记录，而不是表格"),
    "help.check.seed": ("repeat a run with this base seed", "用这个基础种子重现一次运行"),
    # infralab grade
    "help.grade.submissions": (
        "submission folders or zips, or class folders holding them",
        "提交文件夹或 zip，或包含它们的班级文件夹",
    ),
    "help.grade.out": (
        "where the gradebook and per-student outputs go (required unless --notebooks)",
        "成绩册和每个学生的输出写到哪里（除非用 --notebooks，否则必填）",
    ),
    "help.grade.notebooks": (
        "grade nbgrader's submitted notebooks into nbgrader's gradebook instead (docs/notebooks.md)",
        "改为评分 nbgrader 提交的笔记本，写入 nbgrader 的成绩册（见 docs/notebooks.md）",
    ),
    "help.grade.db": (
        "with --notebooks: the gradebook URL (default: the course directory's sqlite)",
        "配合 --notebooks：成绩册的 URL（默认：课程目录下的 sqlite）",
    ),
    "help.grade.jobs": ("submissions graded at once (default: one per core)", "同时评分的提交数（默认：每个核一个）"),
    "help.grade.seed": (
        "the grading seed (the same seed gives the same verdicts)",
        "评分种子（相同种子给出相同判定）",
    ),
    "help.grade.visible": ("also run the visible tests", "同时运行可见测试"),
    "help.grade.call_timeout": (
        "seconds one call into student code may take (default {cpu:g}; {gpu:g} with --gpu: a first call "
        "compiles and autotunes)",
        "单次调用学生代码允许的秒数（默认 {cpu:g}；使用 --gpu 时为 {gpu:g}：首次调用要编译和自动调优）",
    ),
    "help.grade.timeout": (
        "seconds of student code per exercise, each has an executor of its own (default {cpu:g}; {gpu:g} "
        "with --gpu: the challenges' timing)",
        "每个练习的学生代码可用秒数，每个练习有自己的执行器（默认 {cpu:g}；使用 --gpu 时为 {gpu:g}：含性能挑战的计时）",
    ),
    "help.grade.gpu": (
        "run gpu tests and performance challenges in the cage, one GPU per worker, timed on the judge's "
        "clock (docs/grading.md); needs a CUDA GPU",
        "在隔离环境中运行 gpu 测试和性能挑战，每个工作进程一块 GPU，按评测器的时钟计时"
        "（见 docs/grading.md）；需要 CUDA GPU",
    ),
    "help.grade.time_cap": (
        "with --gpu: seconds of sampling per challenge shape, candidate and baseline together (default 20)",
        "配合 --gpu：每个挑战形状的采样秒数，候选实现与基线合计（默认 20）",
    ),
    "help.grade.one_block_gate": (
        "with --gpu: armed batches wait behind a one-block gate instead of the default gate that fills every SM; "
        "work a submission launches on a side stream below the launcher can then run before the judge's clock "
        "starts (for comparison runs only; docs/grading.md)",
        "配合 --gpu：预备批次在单个线程块的闸门之后等待，而不是默认的占满所有 SM 的闸门；此时提交代码绕过启动器"
        "在副流上发射的工作可能在评测时钟启动前运行（仅用于对比测量；docs/grading.md）",
    ),
    "help.grade.memory": ("GiB of address space for the executor (CPU only)", "执行器的地址空间大小，单位 GiB（仅 CPU）"),
    "help.grade.backend": (
        "where submissions are graded in parallel: a local pool or Ray tasks (default: %(default)s)",
        "提交在哪里并行评分：本机进程池（local）或 Ray 任务（ray）（默认：%(default)s）",
    ),
    "help.grade.address": ("Ray cluster address (default: start a local instance)", "Ray 集群地址（默认：启动一个本地实例）"),
    # infralab validate (and its --mutate options)
    "help.validate.exercise": ("only this exercise", "只运行这个练习"),
    "help.validate.jobs": ("pytest-xdist workers", "pytest-xdist 工作进程数"),
    "help.validate.seed": (
        "base seed (default: a fresh one, shown in the report)",
        "基础种子（默认：新取一个，显示在报告中）",
    ),
    "help.validate.seeds": (
        "run the solution's seed-dependent tests at N base seeds: --seed, --seed+1, ... (default 1)",
        "在 N 个基础种子（--seed、--seed+1、...）下运行参考解中依赖种子的测试（默认 1）",
    ),
    "help.validate.sweep_mutants": (
        "with --seeds N: run the mutants at every seed too; a mutant that passes every hidden test at some seed "
        "is a hole (slower: each mutant's seed-dependent tests run N times)",
        "与 --seeds N 一起使用：变异体也在每个种子下运行；在某个种子下通过所有隐藏测试的变异体算作漏洞"
        "（更慢：每个变异体中依赖种子的测试运行 N 次）",
    ),
    "help.validate.json": ("print the matrix as JSON", "以 JSON 输出结果矩阵"),
    "help.validate.mutate": (
        "mutation testing: run the hidden tests on generated mutants of each reference solution and report "
        "the kill rate and every survivor",
        "变异测试：在每个参考解生成的变异体上运行隐藏测试，报告杀死率和每个存活的变异体",
    ),
    "help.validate.max_mutants": (
        "(--mutate) test at most this many mutants per exercise",
        "（--mutate）每个练习最多测试这么多个变异体",
    ),
    "help.validate.mutant_timeout": (
        "(--mutate) seconds per test before it fails (and kills its mutant)",
        "（--mutate）每个测试的秒数上限，超时即失败（并杀死该变异体）",
    ),
    "help.validate.equivalents": ("(--mutate) the reviewed list (default {path})", "（--mutate）已审核的等价变异体列表（默认 {path}）"),
    "help.validate.report_dir": ("(--mutate) where the reports go (default {path})", "（--mutate）报告写到哪里（默认 {path}）"),
    "help.validate.no_report": ("(--mutate) print only, write no report", "（--mutate）只打印，不写报告"),
    # infralab release
    "help.release.out": (
        "folder for the student version (new, or an earlier release)",
        "学生版的输出文件夹（新文件夹，或之前发布的版本）",
    ),
    "help.release.no_stub_check": ("skip running the visible tests on the stubs", "跳过在桩代码上运行可见测试"),
    "help.release.no_golden_check": (
        "skip recomputing the visible tests' goldens from the references (infralab.golden)",
        "跳过用参考解重新计算可见测试的黄金值（infralab.golden）",
    ),
    # infralab bench
    "help.bench.exercise": ("e.g. rmsnorm or part03_kernels.rmsnorm", "例如 rmsnorm 或 part03_kernels.rmsnorm"),
    "help.bench.challenge": ("only this challenge id (repeatable)", "只运行这个挑战 id（可重复）"),
    "help.bench.profile": ("judge against this profile instead of the detected one", "按这个档案评判，而不是自动识别的档案"),
    "help.bench.json": ("print the record as JSON", "以 JSON 输出记录"),
    "help.bench.record": ("write the result record (JSON) here", "把结果记录（JSON）写到这里"),
    "help.bench.seed": ("seed of the random inputs", "随机输入的种子"),
    "help.bench.time_cap": ("seconds of sampling per shape (default 10)", "每个形状的采样秒数（默认 10）"),
    "help.bench.graph_batches": (
        "experimental: time calls under 20 us as replays of CUDA graphs of a 20 ms batch, as grade --gpu does "
        "(docs/performance.md)",
        "实验性：把短于 20 微秒的调用按约 20 毫秒一批的 CUDA graph 重放计时，与 grade --gpu 相同（见 docs/performance.md）",
    ),
    # infralab leaderboard
    "help.leaderboard.results_dir": (
        "a folder of result records (*.json, searched recursively)",
        "结果记录所在文件夹（*.json，递归查找）",
    ),
    "help.leaderboard.out": ("folder for leaderboard.csv and leaderboard.html", "leaderboard.csv 和 leaderboard.html 的输出文件夹"),
    # infralab profile
    "help.profile.show": ("list the registered profiles, or show one", "列出已登记的档案，或显示其中一个"),
    "help.profile.show.name": ("a profile's name (e.g. h200)", "档案名（例如 h200）"),
    "help.profile.detect": ("which registered profile this machine's GPU matches", "本机 GPU 匹配哪个已登记的档案"),
    "help.profile.calibrate": (
        "measure this GPU's ceilings and write a calibrated profile",
        "测量本机 GPU 的性能上限并写出校准后的档案",
    ),
    "help.profile.calibrate.name": ("the new profile's name (default: from the device name)", "新档案的名字（默认：取自设备名）"),
    "help.profile.calibrate.update": ("re-calibrate this existing profile file in place", "原地重新校准这个已有的档案文件"),
    "help.profile.calibrate.out": (
        "folder for a new profile (default: the course's hardware_profiles/)",
        "新档案的输出文件夹（默认：课程的 hardware_profiles/）",
    ),
    "help.profile.calibrate.peak_bandwidth": ("datasheet memory bandwidth, GB/s", "规格书标称的显存带宽，GB/s"),
    "help.profile.calibrate.peak_bf16": ("datasheet dense bf16 rate, TFLOP/s", "规格书标称的稠密 bf16 算力，TFLOP/s"),
    # infralab gradescope
    "help.gradescope.out": ("the autograder zip to write, e.g. autograder.zip", "要写出的自动评分 zip，例如 autograder.zip"),
    "help.gradescope.torch": (
        "the torch requirement setup.sh installs (default: {torch!r}; 'skip' keeps the image's)",
        "setup.sh 安装的 torch 版本要求（默认：{torch!r}；'skip' 保留镜像自带的）",
    ),
    "help.gradescope.autograder": (
        "run inside Gradescope's autograder (run_autograder calls this)",
        "在 Gradescope 的自动评分环境中运行（由 run_autograder 调用）",
    ),
    # infralab nbgrader
    "help.nbgrader.export": (
        "write an nbgrader course directory (source/<part>/<exercise>.ipynb)",
        "写出 nbgrader 课程目录（source/<part>/<exercise>.ipynb）",
    ),
    "help.nbgrader.export.out": ("the course directory to write (nbgrader's root)", "要写出的课程目录（nbgrader 的根目录）"),
    "help.nbgrader.export.part": ("only this part (repeatable); default: every part", "只导出这一部分（可重复）；默认：所有部分"),
    "help.nbgrader.export.exercise": ("only this exercise (repeatable), e.g. rmsnorm", "只导出这个练习（可重复），例如 rmsnorm"),
    "help.nbgrader.export.student": (
        "student notebooks to work in (stubs, visible tests, no nbgrader regions); existing notebooks are kept",
        "供学生作答的笔记本（桩代码、可见测试，没有 nbgrader 区域）；已有的笔记本会保留",
    ),
    "help.nbgrader.export.force": ("with --student: overwrite existing notebooks", "配合 --student：覆盖已有的笔记本"),
    "help.nbgrader.export.db": (
        "gradebook database URL to write into nbgrader_config.py",
        "写入 nbgrader_config.py 的成绩册数据库 URL",
    ),
    "help.nbgrader.check": (
        "check your notebooks' answers with the visible tests (as `infralab check`)",
        "用可见测试检查你的笔记本答案（同 `infralab check`）",
    ),
    "help.nbgrader.check.notebooks": (
        "a folder of notebooks (<part>/<exercise>.ipynb), e.g. notebooks/",
        "笔记本所在文件夹（<part>/<exercise>.ipynb），例如 notebooks/",
    ),
    "help.nbgrader.step": (
        "run `{what}` with this environment's programs on PATH (nbgrader needs alembic)",
        "把本环境的程序放在 PATH 上运行 `{what}`（nbgrader 需要 alembic）",
    ),
    "help.nbgrader.step.assignment": (
        "assignment(s): the part ids, e.g. part01_transformer",
        "作业：部分的 id，例如 part01_transformer",
    ),
    "help.nbgrader.step.course_dir": (
        "the nbgrader course directory (default: the current folder)",
        "nbgrader 课程目录（默认：当前文件夹）",
    ),
    "help.nbgrader.step.student": ("with autograde: only this student (repeatable)", "配合 autograde：只处理这个学生（可重复）"),
    "help.nbgrader.grade": (
        "grade nbgrader's submitted notebooks with the judge; write the gradebook",
        "用评测器评分 nbgrader 提交的笔记本；写入成绩册",
    ),
    "help.nbgrader.grade.submitted": (
        "nbgrader's submitted/ folder (or the course directory holding it)",
        "nbgrader 的 submitted/ 文件夹（或包含它的课程目录）",
    ),
    "help.nbgrader.grade.db": (
        "gradebook database URL (default: sqlite gradebook.db of the course directory)",
        "成绩册数据库 URL（默认：课程目录下的 sqlite gradebook.db）",
    ),
    "help.nbgrader.grade.assignment": ("only this assignment (repeatable)", "只评分这个作业（可重复）"),
    "help.nbgrader.grade.student": ("only this student (repeatable)", "只评分这个学生（可重复）"),
    "help.nbgrader.grade.jobs": ("submissions judged at once (default: one per core)", "同时评判的提交数（默认：每个核一个）"),
    "help.nbgrader.grade.in_process": (
        "run student code in this process's pytest (for debugging; default: the isolated judge when installed)",
        "在本进程的 pytest 中运行学生代码（用于调试；默认：已安装时用隔离的评测器）",
    ),
    "help.nbgrader_bench.description": (
        "how long one part's notebooks take for one student: export, generate_assignment, autograde and "
        "the secure path (prints the environment first)",
        "一个学生的一部分笔记本各步骤耗时：导出、generate_assignment、autograde 和安全评分路径（先打印运行环境）",
    ),
    "help.nbgrader_bench.part": ("the part to time (default: %(default)s)", "要计时的部分（默认：%(default)s）"),
    "help.nbgrader_bench.work": ("course directory to write (default: a temporary one)", "要写出的课程目录（默认：临时目录）"),
    # python -m infralab.perf.roofline
    "help.roofline.description": ("draw a saved record's roofline (a PNG)", "绘制已保存记录的 roofline 图（PNG）"),
    "help.roofline.record": ("a result record (JSON) with GPU perf entries", "含 GPU 性能条目的结果记录（JSON）"),
    "help.roofline.out": ("the PNG to write", "要写出的 PNG 文件"),
    # pytest --help (the plugin's options: built before any option is parsed, so in INFRALAB_LANG or the locale)
    "help.pytest.target": (
        "what to test: exercises (default), solutions, a submission folder, or mutant:<part>.<exercise>:<name>",
        "测试对象：exercises（默认）、solutions、一个提交文件夹，或 mutant:<part>.<exercise>:<name>",
    ),
    "help.pytest.course": (
        "the course root (folder with course.yml); default: found from rootdir or cwd",
        "课程根目录（含 course.yml 的文件夹）；默认：从 rootdir 或当前目录查找",
    ),
    "help.pytest.record": ("write the run's result record (JSON) to this path", "把本次运行的结果记录（JSON）写到这个路径"),
    "help.pytest.seed": (
        "base seed; each test's seed derives from it (default: fresh seeds)",
        "基础种子；每个测试的种子由它派生（默认：新取种子）",
    ),
    "help.pytest.seeds": (
        "run each seed-dependent test at N base seeds (the --seed S, S+1, ...) in this one session; in "
        "--soundness mode on the solution only, unless --sweep-mutants (default 1)",
        "在本次会话中以 N 个基础种子（--seed S、S+1、...）运行每个依赖种子的测试；"
        "--soundness 模式下只对参考解这样做，除非给了 --sweep-mutants（默认 1）",
    ),
    "help.pytest.sweep_mutants": (
        "with --soundness and --seeds N: run the mutants' seed-dependent tests at every seed too, so that a "
        "mutant caught only by some draws shows at the seeds where it escapes",
        "与 --soundness 和 --seeds N 一起使用：变异体中依赖种子的测试也在每个种子下运行，"
        "只被部分随机抽样抓住的变异体会在它逃过的种子上显示出来",
    ),
    "help.pytest.soundness": (
        "run each exercise's tests on the solution, the stub and every mutant",
        "在参考解、桩代码和每个变异体上运行每个练习的测试",
    ),
    "help.pytest.isolated": (
        "run the implementation under test in a sandboxed executor process",
        "在沙箱执行器进程中运行被测实现",
    ),
    "help.pytest.gpu": (
        "with --isolated: the executor sees this machine's CUDA GPU; gpu tests and performance challenges run "
        "in the cage, timed on the judge's clock (infralab grade --gpu)",
        "配合 --isolated：执行器可见本机的 CUDA GPU；gpu 测试和性能挑战在隔离环境中运行，"
        "按评测器的时钟计时（infralab grade --gpu）",
    ),
    "help.pytest.perf_time_cap": (
        "with --gpu: seconds of sampling per performance challenge shape (infralab grade --time-cap)",
        "配合 --gpu：每个性能挑战形状的采样秒数（infralab grade --time-cap）",
    ),
    "help.pytest.perf_one_block_gate": (
        "with --gpu: armed batches wait behind a one-block gate, not the filling one (infralab grade --one-block-gate)",
        "配合 --gpu：预备批次在单个线程块的闸门之后等待，而非占满设备的闸门（infralab grade --one-block-gate）",
    ),
    "help.pytest.record_mode": (
        "the mode written into the record (check, grade, validate)",
        "写入记录的模式（check、grade、validate）",
    ),
    "help.pytest.lang": (
        "language of messages and diagnoses: zh or en (default: INFRALAB_LANG, course.yml language:, the locale)",
        "消息和诊断的语言：zh 或 en（默认依次取 INFRALAB_LANG、course.yml 的 language:、系统区域设置）",
    ),
    "help.pytest.update_golden": (
        "record the golden expectations of the visible tests that use the golden fixture (dev tree only; "
        "run with --target solutions -n 0)",
        "记录使用 golden fixture 的可见测试的黄金期望值（仅限开发树；用 --target solutions -n 0 运行）",
    ),
    "help.pytest.mutants": (
        "(infralab validate --mutate) JSON manifest of the mutant targets to run",
        "（infralab validate --mutate）要运行的变异体目标的 JSON 清单",
    ),
}
