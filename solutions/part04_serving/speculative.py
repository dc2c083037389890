"""Speculative decoding: greedy verification and the rejection-sampling rule that keeps the
target distribution (textbook 08 §8.7). Reference solution; the stub is the specification."""
from __future__ import annotations

import torch


def greedy_verify(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """Accepted draft prefix, then the target's own token: (n,) int64, 1 <= n <= K + 1."""
    target = target_logits.argmax(1)  # (K + 1,)
    n = 0
    while n < len(draft_tokens) and draft_tokens[n] == target[n]:  # accept up to the first disagreement
        n += 1
    return target[: n + 1].clone()  # where they agree the target's token is the draft's


def acceptance_rate(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q), over the last dimension."""
    return torch.minimum(p, q).sum(-1)


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)); p where p == q (a rejection then has probability 0)."""
    r = (p - q).clamp(min=0)
    mass = r.sum(-1, keepdim=True)
    return torch.where(mass > 0, r / mass.clamp(min=torch.finfo(r.dtype).tiny), p)


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """E[tokens per step] = (1 - alpha^(k+1)) / (1 - alpha): accepted drafts plus the one target token."""
    return float(k + 1) if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


def _accepts(u: torch.Tensor, p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """The acceptance test u < min(1, p(x)/q(x)), written without dividing (q(x) > 0 for a drafted x)."""
    return u * q_x < p_x


def rejection_sample(draft_tokens: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Verify B drafts of K tokens at once: (output_tokens (B, K+1) padded with -1, num_accepted (B,))."""
    b, k = draft_tokens.shape
    gen = torch.Generator().manual_seed(seed)
    u = torch.rand(b, k, generator=gen)
    index = draft_tokens.unsqueeze(2)  # (B, K, 1)
    p = target_probs.double().gather(2, index).squeeze(2)  # (B, K) p(x_i): the first K rows of the target
    q = draft_probs.double().gather(2, index).squeeze(2)  # (B, K) q(x_i)
    num_accepted = _accepts(u, p, q).long().cumprod(1).sum(1)  # (B,) accepted until the first rejection
    rows = torch.arange(b)
    rejected = num_accepted < k
    at = num_accepted.clamp(max=k - 1)
    fix = residual_distribution(target_probs[rows, at].double(), draft_probs[rows, at].double())  # (B, V)
    last = torch.where(rejected.unsqueeze(1), fix, target_probs[:, k].double())  # bonus row when all accepted
    extra = torch.multinomial(last, 1, generator=gen).squeeze(1)
    kept = torch.where(torch.arange(k) < num_accepted.unsqueeze(1), draft_tokens, -1)  # (B, K)
    out = torch.nn.functional.pad(kept, (0, 1), value=-1)  # (B, K + 1)
    out[rows, num_accepted] = extra
    return out, num_accepted
