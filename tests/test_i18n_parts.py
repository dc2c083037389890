"""--lang zh reaches every part's visible failure messages and diagnoses.

For each part of course.yml, one known mutant fails one visible test; the message a student reads
must be Chinese (the kit's assertion text) and so must the diagnosis ("看起来像：..."). One pytest
run in soundness mode (every target of the chosen exercises, -k the chosen tests) serves all parts.
"""
import pytest

from infralab.course import load_course
from infralab.runner import TestRun, run_tests
from tests.test_i18n import CJK

# part -> (exercise, mutant, visible test that the mutant fails with a diagnosis)
CASES = {
    "part00_foundations": ("roofline", "matmul_flops_as_macs",
                           "test_matmul_cost_counts_two_flops_per_multiply_add_and_every_operand_once"),
    "part01_transformer": ("rope", "interleaved_instead_of_rotate_half",
                           "test_rotate_half_pairs_dimension_i_with_i_plus_half"),
    "part02_parallelism": ("zero", "padding_not_aligned", "test_flatten_and_pad_pads_with_zeros"),
    "part03_kernels": ("softmax", "no_max_subtraction", "test_softmax_of_large_logits_subtracts_the_row_max"),
    "part04_serving": ("paged_kv", "free_ignores_ref_counts",
                       "test_freeing_a_fork_keeps_the_blocks_its_parent_still_reads"),
    "part05_quantization": ("gptq", "missing_damping", "test_damping_makes_a_singular_hessian_invertible"),
    "part06_post_training": ("dpo", "smoothing_on_wrong_term",
                             "test_label_smoothing_gives_eps_to_the_flipped_preference"),
}


def test_every_part_of_the_course_has_a_case():
    assert set(CASES) == {part.id for part in load_course().parts}


@pytest.fixture(scope="module")
def zh_record():
    course = load_course()
    exercises = tuple(course.exercise(f"{part}.{name}") for part, (name, _, _) in CASES.items())
    run = TestRun(target="solutions", exercises=exercises, visible=True, hidden=False, mode="validate",
                  soundness=True, seed=1, extra_args=["--lang", "zh", "-k", " or ".join(t for _, _, t in CASES.values())])
    return run_tests(course, run)


@pytest.mark.parametrize("part", sorted(CASES))
def test_a_mutant_fails_a_visible_test_in_chinese(zh_record, part):
    name, mutant, test = CASES[part]
    target = f"mutant:{part}.{name}:{mutant}"
    found = [t for e in zh_record["exercises"] for t in e["tests"]
             if t["target"] == target and t["name"].split("[")[0].endswith(test)]
    assert found, f"{target} did not run {test}: {zh_record['output_tail'][-2000:]}"
    (t,) = found
    assert t["outcome"] == "failed", t
    head, _, _ = t["message"].partition("看起来像：")
    assert CJK.search(head), f"the failure message is not Chinese: {t['message']}"
    assert "看起来像：" in t["message"] and t["diagnosis"] and CJK.search(t["diagnosis"]), t
