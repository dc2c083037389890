"""Float64 references and known mistakes of part01_transformer.sampling.

Top-p by its definition (the mass of strictly more likely tokens, in O(V^2)); min-p relative to
the top probability.
"""
import torch

NEG_INF = float("-inf")
GLOBAL_RNG = ("the sampler seeded or drew from torch's global RNG instead of its own torch.Generator(seed)",
              "采样器用 torch 的全局随机数生成器设种子或抽样，而不是用自己的 torch.Generator(seed)")


def ref_top_k(z, k):
    kth = z.double().sort(dim=-1, descending=True).values[..., min(k, z.shape[-1]) - 1:][..., :1]
    return z.masked_fill(z.double() < kth, NEG_INF)


def mass_strictly_above(z):
    """(B, V) float64: for each token, the probability of the tokens strictly more likely."""
    probs = torch.softmax(z.double(), dim=-1)
    higher = probs.unsqueeze(-2) > probs.unsqueeze(-1)  # [b, i, j]: token j more likely than i
    return (probs.unsqueeze(-2) * higher).sum(-1)


def ref_top_p(z, p):
    return z.masked_fill(mass_strictly_above(z) >= p, NEG_INF)


def min_p_ratio(z):
    probs = torch.softmax(z.double(), dim=-1)
    return probs / probs.amax(dim=-1, keepdim=True)


def ref_min_p(z, m):
    return z.masked_fill(min_p_ratio(z) < m, NEG_INF)


def ref_repetition_penalty(z, context, penalty):
    seen = torch.zeros(z.shape, dtype=torch.bool)
    for b in range(z.shape[0]):
        seen[b, context[b].tolist()] = True
    return torch.where(seen, torch.where(z > 0, z / penalty, z * penalty), z)


def top_k_mistakes(z, k):
    return {
        ("exactly k tokens kept from torch.topk's indices: tokens tied with the k-th value were dropped",
         "按 torch.topk 的索引恰好保留 k 个 token：与第 k 个值相等的 token 被丢掉了"):
            lambda: torch.full_like(z, NEG_INF).scatter(-1, torch.topk(z, k, dim=-1).indices,
                                                        torch.topk(z, k, dim=-1).values),
        ("kept k - 1 tokens (off by one)", "保留了 k - 1 个 token（差一）"): lambda: ref_top_k(z, k - 1),
        ("kept k + 1 tokens (off by one)", "保留了 k + 1 个 token（差一）"): lambda: ref_top_k(z, k + 1),
        ("kept the k smallest logits instead of the largest", "保留了最小而不是最大的 k 个 logit"): lambda: -ref_top_k(-z, k),
    }


def top_p_mistakes(z, p):
    above = mass_strictly_above(z)
    probs = torch.softmax(z.double(), dim=-1)
    return {
        ("one token too few: removed the token whose probability makes the running sum cross p "
         "(compared the inclusive cumulative sum with p)",
         "少了一个 token：去掉了使累计和越过 p 的那个 token（用包含自身的累计和与 p 比较）"):
            lambda: z.masked_fill((above + probs >= p) & (above > 0), NEG_INF),
        ("the top token was not always kept",
         "概率最高的 token 没有总被保留"): lambda: z.masked_fill(above + probs >= p, NEG_INF),
        ("kept the tokens whose cumulative mass is *above* p (mask inverted)", "保留了累计概率 *超过* p 的 token（掩码取反了）"):
            lambda: z.masked_fill(above < p, NEG_INF),
        ("cut inside a tie, as transformers' TopPLogitsWarper does (ascending sort, remove while the cumulative "
         "sum <= 1 - p): tokens tied with the cut-off must be kept or removed together",
         "像 transformers 的 TopPLogitsWarper 那样在并列处截断（升序排序，累加和 <= 1 - p 的都删掉）："
         "与截断点概率相等的 token 必须同进同退"): lambda: transformers_top_p(z, p),
    }


def transformers_top_p(z, p):
    """transformers' tie rule (TopPLogitsWarper): which tied tokens go depends on the sort."""
    ascending, order = torch.sort(z, descending=False)
    remove = torch.softmax(ascending.float(), dim=-1).cumsum(dim=-1) <= 1 - p
    remove[..., -1:] = False
    return z.masked_fill(remove.scatter(-1, order, remove), NEG_INF)


def min_p_mistakes(z, m):
    probs = torch.softmax(z.double(), dim=-1)
    return {
        ("threshold relative to the sum of the probabilities (probs >= min_p) instead of min_p * max prob",
         "阈值相对于概率之和（probs >= min_p），而不是 min_p * 最大概率"):
            lambda: z.masked_fill(probs < m, NEG_INF),
        ("threshold applied to the logits (z >= min_p * max z) instead of the probabilities",
         "阈值作用在 logit 上（z >= min_p * max z），而不是概率上"):
            lambda: z.masked_fill(z < m * z.amax(-1, keepdim=True), NEG_INF),
    }


def penalty_mistakes(z, context, penalty):
    seen = torch.zeros(z.shape, dtype=torch.bool)
    counts = torch.zeros(z.shape)
    for b in range(z.shape[0]):
        seen[b, context[b].tolist()] = True
        counts[b] = torch.bincount(context[b], minlength=z.shape[-1]).float()
    return {
        ("negative logits divided by the penalty as well (that makes them *more* likely)",
         "负 logit 也除以了惩罚系数（反而让它们 *更* 可能被选中）"):
            lambda: torch.where(seen, z / penalty, z),
        ("negative logits divided and positive ones multiplied (signs swapped)",
         "负 logit 做了除法、正 logit 做了乘法（符号弄反了）"):
            lambda: torch.where(seen, torch.where(z > 0, z * penalty, z / penalty), z),
        ("penalised once per occurrence instead of once per token", "每出现一次惩罚一次，而不是每个 token 惩罚一次"):
            lambda: torch.where(z > 0, z / penalty ** counts, z * penalty ** counts),
        ("every token penalised, not only the ones in the context", "惩罚了所有 token，而不只是上下文中出现过的"):
            lambda: torch.where(z > 0, z / penalty, z * penalty),
    }


def draw_mistakes(z, temperature):
    """Distributions (float64) a sampler with a known temperature mistake draws from."""
    return {("temperature applied after the softmax (so it had no effect)",
             "温度在 softmax 之后才应用（因此没有效果）"): torch.softmax(z.double(), -1),
            ("logits multiplied by the temperature", "logit 乘以了温度"): torch.softmax(z.double() * temperature, -1)}
