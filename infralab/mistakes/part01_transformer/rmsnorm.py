"""References and known mistakes of part01_transformer.rmsnorm."""
import torch
import torch.nn.functional as F


def reference_rms_norm(x, w, eps):
    """HF LlamaRMSNorm's order: fp32 normalisation, cast back, then the weight."""
    return w * F.rms_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)


def rms_mistakes(x, w, eps):
    xf = x.float()
    return {
        ("eps added outside the square root (x / (rms + eps))", "eps 加在了平方根外面（x / (rms + eps)）"):
            lambda: w * (xf / (xf.pow(2).mean(-1, keepdim=True).sqrt() + eps)).to(x.dtype),
        ("the mean was subtracted (that is LayerNorm, not RMSNorm)", "减去了均值（那是 LayerNorm，不是 RMSNorm）"):
            lambda: w * F.layer_norm(xf, (x.shape[-1],), eps=eps).to(x.dtype),
        ("normalised over the first dimension instead of the last", "在第一维而不是最后一维上归一化"):
            lambda: w * (xf * torch.rsqrt(xf.pow(2).mean(0, keepdim=True) + eps)).to(x.dtype),
        ("computed in the input's half precision, so x**2 overflowed", "用输入的半精度计算，x**2 溢出了"):
            lambda: w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)),
    }


def ln_mistakes(x, w, b, eps):
    xf = x.float()
    d = x.shape[-1]
    return {
        ("unbiased variance (divided by D - 1; torch.var's default)", "用了无偏方差（除以 D - 1；torch.var 的默认做法）"):
            lambda: ((xf - xf.mean(-1, keepdim=True)) / torch.sqrt(xf.var(-1, keepdim=True) + eps) * w + b).to(x.dtype),
        ("the mean was not subtracted (that is RMSNorm)", "没有减去均值（那是 RMSNorm）"):
            lambda: (F.rms_norm(xf, (d,), eps=eps) * w + b).to(x.dtype),
        ("bias was left out", "漏了 bias"): lambda: F.layer_norm(xf, (d,), w.float(), None, eps).to(x.dtype),
    }
