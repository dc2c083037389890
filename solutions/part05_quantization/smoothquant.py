"""SmoothQuant: migrating activation outliers into the weights for W8A8 (textbook 08 §8.5).

Reference solution. 中文：参考实现（逐通道平滑因子、迁移进权重、W8A8 伪量化）。
"""
from __future__ import annotations

import torch


def channel_absmax(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]).float().abs().amax(0)            # (in,)


def smooth_scales(act_absmax: torch.Tensor, weight: torch.Tensor, alpha: float = 0.5) -> torch.Tensor:
    w_absmax = weight.float().abs().amax(0).clamp(min=1e-5)             # (in,): over the output rows
    return (act_absmax.float().pow(alpha) / w_absmax.pow(1 - alpha)).clamp(min=1e-5)


def migrate(x: torch.Tensor, weight: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.float() / s, weight.float() * s                             # X diag(s)^-1, W diag(s)


def fake_quant_int8(t: torch.Tensor, per_row: bool) -> torch.Tensor:
    t = t.float()
    amax = t.abs().amax(-1, keepdim=True) if per_row else t.abs().amax().reshape(1, 1)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    return torch.clamp(torch.round(t / scale), -127, 127) * scale


def w8a8_linear(x: torch.Tensor, weight: torch.Tensor, per_token: bool = True,
                per_channel: bool = False) -> torch.Tensor:
    return fake_quant_int8(x, per_token) @ fake_quant_int8(weight, per_channel).T


def smoothquant_linear(x: torch.Tensor, weight: torch.Tensor, act_absmax: torch.Tensor, alpha: float = 0.5,
                       per_token: bool = True, per_channel: bool = False) -> torch.Tensor:
    x_s, w_s = migrate(x, weight, smooth_scales(act_absmax, weight, alpha))
    return w8a8_linear(x_s, w_s, per_token, per_channel)
