"""The guards around every call (infralab.guards): op classes checked at the aten dispatcher, so no
alias, composite, method, torch.ops call or switched-off function mode slips past; the torch side
of a Triton exercise limited to allocate/view/copy/cast/fill; inputs a call may not change; and a
dispatch guard removed by the code under test fails the call."""
import pytest
import torch
import torch.nn.functional as F

from infralab.course import load_course
from infralab.guards import BannedCall, GuardDisabled, InputModified, checked_call, guarded
from infralab.opclasses import ban_classes, op_class

BANS = {e.id: e.banned for e in load_course().exercises}
a, b, v = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)
q = torch.randn(1, 2, 5, 8)


def _without_function_modes(fn):
    def run():
        with torch._C.DisableTorchFunction():
            return fn()
    return run


MATMUL_SHORTCUTS = {
    "torch.matmul": lambda: torch.matmul(a, b),
    "a @ b": lambda: a @ b,
    "torch.mm": lambda: torch.mm(a, b),
    "Tensor.mm": lambda: a.mm(b),
    "torch.bmm": lambda: torch.bmm(a[None], b[None]),
    "torch.einsum": lambda: torch.einsum("ik,kj->ij", a, b),
    "F.linear": lambda: F.linear(a, b),
    "torch.addmm": lambda: torch.addmm(a, a, b),
    "torch.dot": lambda: torch.dot(v, v),
    "torch.mv": lambda: torch.mv(a, v),
    "torch.tensordot": lambda: torch.tensordot(a, b, dims=1),
    "torch.ops.aten.mm": lambda: torch.ops.aten.mm(a, b),
    "DisableTorchFunction + mm": _without_function_modes(lambda: torch.mm(a, b)),
}
ATTENTION_SHORTCUTS = {
    "F.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(q, q, q),
    "sdpa math path via torch.ops": lambda: torch.ops.aten._scaled_dot_product_attention_math(q, q, q),
    "DisableTorchFunction + sdpa": _without_function_modes(lambda: F.scaled_dot_product_attention(q, q, q)),
}


@pytest.mark.parametrize("call", MATMUL_SHORTCUTS.values(), ids=MATMUL_SHORTCUTS.keys())
def test_every_matmul_shortcut_is_caught_at_the_dispatcher(call):
    flags = []
    with pytest.raises(BannedCall, match=r"matmul called aten\.\w+ \(matmul routine\), which this exercise bans"):
        checked_call(call, (), {}, where="matmul", banned=BANS["part03_kernels.matmul"],
                     on_flag=lambda kind, detail: flags.append(kind))
    assert flags == ["banned-call"]


@pytest.mark.parametrize("call", ATTENTION_SHORTCUTS.values(), ids=ATTENTION_SHORTCUTS.keys())
def test_every_attention_shortcut_is_caught_at_the_dispatcher(call):
    with pytest.raises(BannedCall, match=r"\(attention routine\)"):
        guarded(call, BANS["part01_transformer.attention"], "attention")()


def test_routines_outside_the_banned_classes_pass_through():
    out = guarded(lambda: (a * b).sum(-1) + torch.exp(v), BANS["part03_kernels.matmul"], "matmul")()
    assert torch.equal(out, (a * b).sum(-1) + torch.exp(v))


def test_the_routine_names_course_yml_used_before_mean_their_class():
    assert ban_classes(["mm", "scaled_dot_product_attention", "logsumexp"]) == {"matmul", "attention", "softmax"}
    with pytest.raises(ValueError):
        ban_classes(["exp"])
    assert op_class("_scaled_dot_product_flash_attention_for_cpu") == "attention" and op_class("exp") is None


def test_the_torch_side_of_a_triton_exercise_may_only_allocate_view_copy_cast_and_fill():
    allowed = lambda x: torch.empty_like(x).copy_(x.view(-1).reshape(x.shape).to(torch.float64)).fill_(0)  # noqa: E731
    with pytest.raises(BannedCall, match=r"aten\.exp in torch: in a Triton exercise the torch side may only"):
        checked_call(lambda x: allowed(x).exp(), (a,), {}, where="softmax", triton=True)
    with pytest.raises(BannedCall, match=r"aten\._softmax"):
        checked_call(lambda x: torch.softmax(x, -1), (a,), {}, where="softmax", triton=True)


def test_a_call_that_pops_the_dispatch_guard_fails_and_is_flagged():
    from torch.utils._python_dispatch import _pop_mode

    def pops():
        _pop_mode()
        return torch.mm(a, b)

    flags = []
    with pytest.raises(GuardDisabled, match="guard around the call was removed"):
        checked_call(pops, (), {}, where="matmul", banned=["matmul"], on_flag=lambda k, d: flags.append(k))
    assert "guard-disabled" in flags
    assert torch.mm(a, b).shape == (4, 4), "the mode stack is balanced again afterwards"


def _zero_inputs_and_add(x, out):
    x.zero_()
    out.copy_(x + 1)
    return out


def test_a_call_that_changes_an_input_it_may_not_fails_naming_it():
    x, out = torch.randn(3), torch.empty(3)
    flags = []
    with pytest.raises(InputModified, match=r"changed its input `x`"):
        checked_call(_zero_inputs_and_add, (x, out), {}, where="f", allowed={"out": 1},
                     on_flag=lambda k, d: flags.append((k, d)))
    assert flags == [("input-modified", "f changed x")]
    y, out = torch.full((3,), float("nan")), torch.empty(3)
    checked_call(lambda x, out: out.copy_(x), (y,), {"out": out}, where="f", allowed={"out": 1})  # NaN stays NaN
