"""Triton mutants are the reference kernel with a text edit: an edit that no longer matches the
reference fails loudly instead of leaving a mutant that is the reference."""
import pytest

pytest.importorskip("triton")

from infralab.triton_mutation import edited_kernel  # noqa: E402
from solutions.part03_kernels import softmax, vector_add  # noqa: E402


def test_an_edit_whose_text_is_gone_from_the_reference_fails_to_build():
    with pytest.raises(ValueError, match="occurs 0 times in the reference kernel, not 1"):
        edited_kernel(vector_add.add_kernel, ("tl.store(out_ptr, x - y)", "tl.store(out_ptr, x + y)"))


def test_an_edit_must_match_as_often_as_it_says():
    with pytest.raises(ValueError, match="occurs 3 times in the reference kernel, not 1"):
        edited_kernel(softmax.softmax_kernel, ('other=-float("inf")', "other=0.0"))
    edited_kernel(softmax.softmax_kernel, ('other=-float("inf")', "other=0.0", 3))
