"""A one-exercise copy of the course (``part01_transformer.rmsnorm``) for the grading kit's tests,
demo and benchmark: grading then depends neither on other exercises nor on course.yml edits.
With ``second=True`` it also holds ``part01_transformer.ffn``, graded after rmsnorm: enough to
check that one exercise's failure costs no other exercise its points."""
from __future__ import annotations

import shutil
from pathlib import Path

EXERCISE = "part01_transformer.rmsnorm"
SECOND = "part01_transformer.ffn"
COURSE_YML = """course:
  id: llm-infra-grading-demo
  title: {en: "Grading demo: one exercise", zh: "评分演示：一个练习"}
parts:
  - id: part01_transformer
    title: {en: "The transformer, one module at a time", zh: "Transformer 与单卡推理"}
    exercises:
      - id: rmsnorm
        title: {en: "RMSNorm and LayerNorm", zh: "RMSNorm 与 LayerNorm"}
        public: [rms_norm, layer_norm]
        points: 5
        textbook: "01 核心模块 (RMSNorm/LayerNorm)"
"""
SECOND_YML = """      - id: ffn
        title: {en: "Gated FFN: SwiGLU and GeGLU", zh: "门控前馈网络 SwiGLU 与 GeGLU"}
        public: [swiglu, geglu]
        points: 5
        textbook: "01 FFN 家族 (SwiGLU/GeGLU)"
"""
FILES = (
    "exercises/__init__.py", "exercises/part01_transformer/__init__.py", "exercises/part01_transformer/rmsnorm.py",
    "exercises/part01_transformer/tests/test_rmsnorm.py", "exercises/part01_transformer/tests/golden/rmsnorm.json",
    "exercises/part01_transformer/tests/golden/rmsnorm.safetensors",
    "solutions/__init__.py", "solutions/part01_transformer/__init__.py", "solutions/part01_transformer/rmsnorm.py",
    "graders/part01_transformer/test_rmsnorm.py",
)
SECOND_FILES = tuple(f.replace("rmsnorm", "ffn") for f in FILES if "rmsnorm" in f)


def kit_root() -> Path:
    return Path(__file__).resolve().parents[2]


def rmsnorm_course(dest: Path, source: Path | None = None, second: bool = False) -> Path:
    """Write the one-exercise course under ``dest`` (copied from the kit at ``source``); with
    ``second``, ffn after it."""
    source = Path(source or kit_root())
    dest = Path(dest)
    for rel in FILES + (SECOND_FILES if second else ()):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, dest / rel)
    shutil.copytree(source / "fixtures/mutants/part01_transformer/rmsnorm", dest / "fixtures/mutants/part01_transformer/rmsnorm")
    (dest / "hardware_profiles").mkdir(exist_ok=True)
    (dest / "course.yml").write_text(COURSE_YML + (SECOND_YML if second else ""), encoding="utf-8")
    return dest
