"""The op classes: which aten ops count as attention, softmax, matmul, and what the torch side of a
Triton exercise may do (allocate, view, copy, cast, fill). The one table behind course.yml's
``banned:`` and the Triton allowlist, both checked at the aten dispatcher by :mod:`infralab.guards`.

Standard library only: course.yml validation imports it without torch, and the cage ships it.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable

# The op classes, by aten overload-packet name (``torch.ops.aten.<name>``). Names ending in "*"
# match as prefixes. The one table: course.yml's ``banned:`` and the Triton allowlist use it.
OP_CLASSES: dict[str, tuple[str, ...]] = {
    "attention": ("scaled_dot_product_attention", "_scaled_dot_product_*", "_flash_attention_*",
                  "_efficient_attention_*", "_cudnn_attention_*", "_fused_sdp_choice", "_native_multi_head_attention",
                  "_transformer_encoder_layer_fwd", "_masked_softmax",
                  "_safe_softmax"),  # only SDPA's math path uses it: torch.ops.aten._scaled_dot_product_attention_math
    "softmax": ("softmax", "_softmax", "log_softmax", "_log_softmax", "logsumexp",
                "special_softmax", "special_log_softmax", "special_logsumexp", "_softmax_backward_data"),
    "matmul": ("mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "dot", "vdot", "mv", "addmv", "addr",
               "outer", "ger", "inner", "einsum", "tensordot", "chain_matmul", "linalg_multi_dot", "linalg_matmul",
               "_addmm_activation", "_int_mm", "_scaled_mm", "_weight_int4pack_mm*", "_weight_int8pack_mm",
               "_mm_*", "_bmm_*", "_convolution", "convolution"),
    # what the torch side of a Triton exercise may do
    "allocate": ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
                 "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor",
                 "arange", "lift_fresh", "lift_fresh_copy", "resize_", "set_", "_local_scalar_dense"),
    "view": ("view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "expand", "expand_as", "permute",
             "transpose", "t", "squeeze", "unsqueeze", "select", "slice", "narrow", "split", "split_with_sizes",
             "unbind", "chunk", "detach", "alias", "view_as", "flatten", "unflatten", "movedim", "diagonal",
             "view_as_real", "view_as_complex", "is_same_size", "_nested_tensor_size", "sym_size", "sym_stride",
             "sym_numel", "sym_storage_offset"),
    "copy": ("copy_", "clone", "contiguous", "_copy_from", "_copy_from_and_resize"),
    "cast": ("_to_copy", "to", "_to_dtype"),
    "fill": ("fill_", "zero_", "fill"),
}
TRITON_TORCH_SIDE = frozenset({"allocate", "view", "copy", "cast", "fill"})
BANNABLE = ("attention", "softmax", "matmul")
# routine names course.yml used before op classes: each means its whole class
ROUTINE_CLASS: dict[str, str] = {
    "scaled_dot_product_attention": "attention", "log_softmax": "softmax", "logsumexp": "softmax",
    **{name: "matmul" for name in ("mm", "bmm", "einsum", "linear", "addmm", "baddbmm", "addbmm", "dot", "mv",
                                   "tensordot")},
}


def ban_classes(names: Iterable[str]) -> frozenset[str]:
    """The op classes meant by course.yml's ``banned:`` entries (classes or routine names);
    ValueError names an entry that is neither."""
    classes = set()
    for name in names:
        if name in BANNABLE:
            classes.add(name)
        elif name in ROUTINE_CLASS:
            classes.add(ROUTINE_CLASS[name])
        else:
            raise ValueError(name)
    return frozenset(classes)


@functools.lru_cache(maxsize=4096)
def op_class(name: str) -> str | None:
    """The class of an aten op by its overload-packet name, or None (an op of no listed class)."""
    for cls, names in OP_CLASSES.items():
        for pattern in names:
            if name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1])):
                return cls
    return None
