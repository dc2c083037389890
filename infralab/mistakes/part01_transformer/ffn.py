"""References and known mistakes of part01_transformer.ffn (float64 from the formulas)."""
import math

import torch


def silu(z):
    return z / (1 + torch.exp(-z))


def gelu_erf(z):
    return 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))


def gelu_tanh(z):
    return 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))


def gated_ffn(x, wg, wu, wd, act, transpose=True):
    """float64 (act(x Wg^T) * (x Wu^T)) Wd^T, cast to x's dtype; transpose=False models a mistake."""
    x64, wg, wu, wd = x.double(), wg.double(), wu.double(), wd.double()
    if transpose:
        wg, wu, wd = wg.T, wu.T, wd.T
    return ((act(x64 @ wg) * (x64 @ wu)) @ wd).to(x.dtype)


def ffn_mistakes(x, wg, wu, wd, act):
    return {
        ("gate and up projections swapped (the activation applied to x W_up)",
         "gate 和 up 投影互换了（激活函数作用在了 x W_up 上）"):
            lambda: gated_ffn(x, wu, wg, wd, act),
        ("sigmoid instead of silu (silu(z) = z * sigmoid(z))",
         "用了 sigmoid 而不是 silu（silu(z) = z * sigmoid(z)）"): lambda: gated_ffn(x, wg, wu, wd, torch.sigmoid),
        ("weights used as (in, out): x @ W instead of x @ W.T (nn.Linear stores (out, in))",
         "权重按 (in, out) 使用：x @ W 而不是 x @ W.T（nn.Linear 存的是 (out, in)）"):
            lambda: gated_ffn(x, wg, wu, wd, act, transpose=False),
        ("the tanh GELU used where the exact erf GELU was asked for",
         "要求精确的 erf GELU，却用了 tanh GELU"): lambda: gated_ffn(x, wg, wu, wd, gelu_tanh),
        ("the exact erf GELU used where the tanh GELU was asked for",
         "要求 tanh GELU，却用了精确的 erf GELU"): lambda: gated_ffn(x, wg, wu, wd, gelu_erf),
        ("silu used instead of GELU", "用了 silu 而不是 GELU"): lambda: gated_ffn(x, wg, wu, wd, silu),
    }
