"""The banned-routine guard sees every way of calling a banned torch routine (functions, methods,
operators, aliases) and names the routine; routines that are not banned pass through."""
import pytest
import torch
import torch.nn.functional as F

from infralab.course import load_course
from infralab.guards import BannedCall, guarded

MATMUL_BANS = next(e.banned for e in load_course().exercises if e.id == "part03_kernels.matmul")
a, b, v = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)

SHORTCUTS = {
    "torch.matmul": lambda: torch.matmul(a, b),
    "a @ b": lambda: a @ b,
    "torch.mm": lambda: torch.mm(a, b),  # resolve_name calls it torch.spmm
    "Tensor.mm": lambda: a.mm(b),
    "torch.bmm": lambda: torch.bmm(a[None], b[None]),
    "torch.einsum": lambda: torch.einsum("ik,kj->ij", a, b),
    "F.linear": lambda: F.linear(a, b),
    "torch.addmm": lambda: torch.addmm(a, a, b),
    "torch.dot": lambda: torch.dot(v, v),
    "torch.mv": lambda: torch.mv(a, v),
    "torch.tensordot": lambda: torch.tensordot(a, b, dims=1),
}


@pytest.mark.parametrize("call", SHORTCUTS.values(), ids=SHORTCUTS.keys())
def test_every_matmul_shortcut_is_caught_and_named(call):
    with pytest.raises(BannedCall, match=r"matmul called torch\.\S+, which this exercise bans"):
        guarded(call, MATMUL_BANS, "matmul")()


def test_routines_that_are_not_banned_pass_through():
    out = guarded(lambda: (a * b).sum(-1) + torch.exp(v), MATMUL_BANS, "matmul")()
    assert torch.equal(out, (a * b).sum(-1) + torch.exp(v))


def test_the_message_names_the_alias_by_its_own_name():
    with pytest.raises(BannedCall, match=r"called torch\.mm,"):
        guarded(lambda: torch.mm(a, b), ["mm"], "matmul")()
