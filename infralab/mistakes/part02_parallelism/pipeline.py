"""References and known mistakes of part02_parallelism.pipeline (schedules, closed forms, the 1F1B run)."""
import torch


def one_f_one_b_order(items_f, items_b, warmup):
    """Warm-up forwards, then F and B in turn, then the remaining backwards (PipeDream-flush, Megatron)."""
    out, f, b = list(items_f[:warmup]), list(items_f[warmup:]), list(items_b)
    while f:
        out += [f.pop(0), b.pop(0)]
    return out + b


def expected_gpipe(p, m):
    return [[("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)] for _ in range(p)]


def expected_1f1b(p, m, extra_warmup=0):
    fs, bs = [("F", i, 0) for i in range(m)], [("B", i, 0) for i in range(m)]
    return [one_f_one_b_order(fs, bs, min(p - r - 1 + extra_warmup, m)) for r in range(p)]


def megatron_virtual(k, p, v, backward):
    """Megatron-LM's interleaved order: the k-th (micro-batch, chunk) a rank runs."""
    chunk = (k // p) % v
    return (k // (p * v)) * p + k % p, (v - 1 - chunk) if backward else chunk


def expected_interleaved(p, v, m, reverse_backward_chunks=True):
    total = m * v
    fs = [("F", *megatron_virtual(k, p, v, False)) for k in range(total)]
    bs = [("B", *megatron_virtual(k, p, v, reverse_backward_chunks)) for k in range(total)]
    return [one_f_one_b_order(fs, bs, min(2 * (p - r - 1) + (v - 1) * p, total)) for r in range(p)]


def normalise(schedule):
    """A schedule as lists of (str, int, int) tuples, or the value itself if it has another shape."""
    try:
        return [[(str(a[0]), int(a[1]), int(a[2])) for a in actions] for actions in schedule]
    except (TypeError, ValueError, IndexError):
        return schedule


SCHEDULE_MISTAKES = {
    ("1F1B warm-up of p - r forwards instead of p - r - 1", "1F1B 预热阶段做了 p - r 次前向，应为 p - r - 1 次"): lambda p, m: expected_1f1b(p, m, extra_warmup=1),
    ("GPipe order (all forwards, then all backwards)", "用了 GPipe 顺序（先做完全部前向，再做全部反向）"): lambda p, m: expected_gpipe(p, m),
}


def schedule_mistakes(p, m):
    return {label: make(p, m) for label, make in SCHEDULE_MISTAKES.items()}


def closed_form_mistakes(p, m, v):
    return {
        ("the approximation (p - 1) / m instead of (p - 1) / (v m + p - 1)", "用了近似式 (p - 1) / m，应为 (p - 1) / (v m + p - 1)"): (p - 1) / (v * m),
        ("the interleaving factor v left out: (p - 1) / (m + p - 1)", "漏了交错因子 v：算成了 (p - 1) / (m + p - 1)"): (p - 1) / (m + p - 1),
    }


def peak_1f1b(p, m):
    return [min(p - r, m) for r in range(p)]


def peak_interleaved(p, v, m):
    return [min(2 * (p - r - 1) + (v - 1) * p + 1, m * v) for r in range(p)]


def stage(x, w, b):
    return torch.tanh(x @ w.T + b)


def reference_step(weights, biases, microbatches, targets, loss_scale=None):
    """Gradients and loss of the unpipelined model (float64 autograd): loss = mean over micro-batches of the MSE."""
    m = microbatches.shape[0]
    ws = [w.detach().double().requires_grad_(True) for w in weights]
    bs = [b.detach().double().requires_grad_(True) for b in biases]
    loss = torch.zeros((), dtype=torch.float64)
    for i in range(m):
        h = microbatches[i].double()
        for w, b in zip(ws, bs):
            h = stage(h, w, b)
        loss = loss + ((h - targets[i].double()) ** 2).mean() / (m if loss_scale is None else loss_scale)
    loss.backward()
    dtype = weights[0].dtype
    return [w.grad.to(dtype) for w in ws], [b.grad.to(dtype) for b in bs], loss.detach().to(dtype)


def step_mistakes(weights, biases, microbatches, targets, rank):
    summed = reference_step(weights, biases, microbatches, targets, loss_scale=1)
    return {("micro-batch losses summed, not averaged (gradients m times too large)", "各 micro-batch 的损失直接相加而没有取平均（梯度大了 m 倍）"): summed[0][rank]}


def expected_messages(p, m, rank):
    """The (peer) sequence of the sends and recvs rank makes when it follows the 1F1B schedule."""
    sends, recvs = [], []
    for kind, _, _ in expected_1f1b(p, m)[rank]:
        if kind == "F":
            if rank > 0:
                recvs.append(rank - 1)
            if rank < p - 1:
                sends.append(rank + 1)
        else:
            if rank < p - 1:
                recvs.append(rank + 1)
            if rank > 0:
                sends.append(rank - 1)
    return sends, recvs


def gpipe_messages(p, m, rank):
    sends = [rank + 1] * (m if rank < p - 1 else 0) + [rank - 1] * (m if rank > 0 else 0)
    recvs = [rank - 1] * (m if rank > 0 else 0) + [rank + 1] * (m if rank < p - 1 else 0)
    return sends, recvs
