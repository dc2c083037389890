"""Hidden tests for part00_foundations.memory_budget."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.testing import assert_close, assert_equal, expect

MODULE = "part00_foundations.memory_budget"


def f64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def config_strategy(mla: bool = False):
    def build(a, group, d, h_mult, i, L, V, tied, explicit_head_dim):
        config = {"vocab_size": V, "hidden_size": a * h_mult, "intermediate_size": i, "num_hidden_layers": L,
                  "num_attention_heads": a, "num_key_value_heads": a // group, "tie_word_embeddings": tied}
        if explicit_head_dim:
            config["head_dim"] = d
        return config
    return st.builds(build, a=st.sampled_from([4, 8, 16, 32]), group=st.sampled_from([1, 2, 4]),
                     d=st.sampled_from([32, 64, 128]), h_mult=st.sampled_from([16, 64, 128]),
                     i=st.integers(8, 30000), L=st.integers(1, 96), V=st.integers(2, 200000), tied=st.booleans(),
                     explicit_head_dim=st.booleans())


# ---- parameters ----------------------------------------------------------------------------------

def weight_shapes(c: dict) -> list[tuple[int, ...]]:
    """Every weight of LlamaForCausalLM, one shape per tensor (an independent reference)."""
    h, d = c["hidden_size"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    layer = [(q, h), (kv, h), (kv, h), (h, q), (c["intermediate_size"], h), (c["intermediate_size"], h),
             (h, c["intermediate_size"]), (h,), (h,)]
    shapes = [(c["vocab_size"], h)] + layer * c["num_hidden_layers"] + [(h,)]
    if not c["tie_word_embeddings"]:
        shapes.append((c["vocab_size"], h))
    return shapes


def numel(shapes) -> int:
    total = 0
    for shape in shapes:
        n = 1
        for size in shape:
            n *= size
        total += n
    return total


def param_mistakes(c: dict, right: int) -> dict:
    h, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    d = c.get("head_dim") or h // c["num_attention_heads"]
    extra_kv = 2 * h * (c["num_attention_heads"] - c["num_key_value_heads"]) * d * L
    out = {("K and V counted with the query heads (GQA ignored)", "K 和 V 按查询头数计算（忽略了 GQA）"): right + extra_kv,
           ("norm weights left out", "漏算了归一化层的权重"): right - (2 * L + 1) * h,
           ("MLP counted as 2 matrices (no gate)",
            "MLP 只算了 2 个矩阵（漏了 gate）"): right - h * c["intermediate_size"] * L,
           ("head_dim ignored (hidden // heads used)",
            "忽略了 head_dim（用了 hidden // heads）"): numel(weight_shapes({**c, "head_dim": None}))}
    if c["tie_word_embeddings"]:
        out[("tied lm_head counted twice", "共享权重的 lm_head 被算了两次")] = right + V * h
    else:
        out[("lm_head left out (embeddings assumed tied)", "漏算了 lm_head（误以为它与词嵌入共享权重）")] = right - V * h
    return out


@pytest.mark.weight(3)
@given(config=config_strategy())
def test_param_count_equals_the_sum_of_weight_shapes(impl, config):
    right = numel(weight_shapes(config))
    assert_equal(impl(MODULE).param_count(config), right, name=(f"parameters of {config}", f"{config} 的参数量"),
                 mistakes=param_mistakes(config, right))


# ---- model states --------------------------------------------------------------------------------

def states(P: float, dp: int, stage: int, K: int = 12) -> list[float]:
    params = 2 * P / (dp if stage == 3 else 1)
    grads = 2 * P / (dp if stage >= 2 else 1)
    optimizer = K * P / (dp if stage >= 1 else 1)
    return [params, grads, optimizer, params + grads + optimizer]


def state_mistakes(P: float, dp: int, stage: int) -> dict:
    out = {("Adam states counted as 8 bytes (no fp32 master copy)",
            "Adam 状态按 8 字节计算（漏了 fp32 主权重副本）"): states(P, dp, stage, K=8),
           ("tensor/pipeline parallelism ignored (whole model on every GPU)", "忽略了张量/流水线并行（每块 GPU 放整个模型）"): None}
    if stage == 2:
        out[("ZeRO-2 partitions the parameters too (that is stage 3)",
             "ZeRO-2 把参数也切分了（那是 stage 3）")] = states(P, dp, 3)
    if stage == 1:
        out[("ZeRO-1 partitions the gradients too (that is stage 2)",
             "ZeRO-1 把梯度也切分了（那是 stage 2）")] = states(P, dp, 2)
    if stage == 3:
        out[("ZeRO-3 leaves the parameters whole (that is stage 2)",
             "ZeRO-3 没有切分参数（那是 stage 2）")] = states(P, dp, 2)
    return {k: f64(v) for k, v in out.items() if v is not None}


def as_row(got) -> torch.Tensor:
    expect(isinstance(got, dict) and set(got) == {"params", "grads", "optimizer", "total"}, "part00.states_dict",
           got=repr(got))
    return f64([float(got[k]) for k in ("params", "grads", "optimizer", "total")])


@pytest.mark.weight(3)
@given(psi=st.integers(10**6, 10**12), dp=st.sampled_from([1, 2, 8, 64, 1024]), stage=st.integers(0, 3),
       tp=st.sampled_from([1, 2, 8]), pp=st.sampled_from([1, 4, 16]))
def test_model_state_bytes_for_every_zero_stage_and_layout(impl, psi, dp, stage, tp, pp):
    got = impl(MODULE).model_state_bytes(psi, dp=dp, zero_stage=stage, tp=tp, pp=pp)
    P = psi / (tp * pp)
    mistakes = state_mistakes(P, dp, stage)
    if tp * pp > 1:
        mistakes[("tensor/pipeline parallelism ignored (whole model on every GPU)",
                  "忽略了张量/流水线并行（每块 GPU 放整个模型）")] = f64(states(psi, dp, stage))
    assert_close(as_row(got), f64(states(P, dp, stage)),
                 name=(f"(params, grads, optimizer, total) bytes, Psi={psi} dp={dp} ZeRO-{stage} tp={tp} pp={pp}",
                       f"(params, grads, optimizer, total) 字节数，Psi={psi} dp={dp} ZeRO-{stage} tp={tp} pp={pp}"),
                 mistakes=mistakes)


@pytest.mark.weight(2)
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_paper_example_of_7_5b_parameters_on_64_gpus(impl, stage):
    """ZeRO (Rajbhandari et al. 2020), Figure 1: Psi = 7.5B, N_d = 64, K = 12 gives 120, 31.4, 16.6 and
    1.9 GB per GPU at stages 0-3: every stage checked, whatever examples the property test above draws."""
    psi, dp = 7_500_000_000, 64
    assert_close(as_row(impl(MODULE).model_state_bytes(psi, dp=dp, zero_stage=stage)), f64(states(psi, dp, stage)),
                 name=(f"ZeRO-{stage} bytes of 7.5B parameters on 64 GPUs", f"7.5B 参数在 64 块 GPU 上 ZeRO-{stage} 的字节数"),
                 mistakes=state_mistakes(psi, dp, stage))


def test_model_state_bytes_with_another_optimizer(impl):
    got = impl(MODULE).model_state_bytes(10**9, dp=4, zero_stage=1, optimizer_bytes=4)   # e.g. 8-bit Adam + master
    assert_close(as_row(got), f64(states(1e9, 4, 1, K=4)), name=("model states with K = 4", "K = 4 时的模型状态"))


@pytest.mark.parametrize("kwargs", [dict(zero_stage=4), dict(zero_stage=-1), dict(dp=0), dict(tp=0)],
                         ids=["stage-4", "stage-negative", "dp-0", "tp-0"])
def test_model_state_bytes_rejects_bad_layouts(impl, kwargs):
    with pytest.raises(ValueError):
        impl(MODULE).model_state_bytes(1000, **kwargs)


# ---- activations ---------------------------------------------------------------------------------

def korthikanti(s, b, h, a, L, t, sp, recompute) -> float:
    """Table 2 of Korthikanti et al. 2022, row by row."""
    table = {
        ("none", False): s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
        ("none", True): s * b * h / t * (34 + 5 * a * s / h),
        ("selective", False): s * b * h * (10 + 24 / t),
        ("selective", True): s * b * h * 34 / t,
        ("full", False): 2 * s * b * h,
        ("full", True): 2 * s * b * h / t,
    }
    return L * table[(recompute, sp)]


def activation_mistakes(s, b, h, a, L, t, pp, sp, recompute) -> dict:
    right = korthikanti(s, b, h, a, L, t, sp, recompute)
    out = {("divided by the pipeline stages (1F1B's first stage holds pp micro-batches)",
            "除以了流水线级数（1F1B 的第一级要保存 pp 个 micro-batch）"): right / pp,
           ("tensor parallelism ignored", "忽略了张量并行"): korthikanti(s, b, h, a, L, 1, sp, recompute),
           ("one layer only (not multiplied by L)", "只算了一层（没有乘以 L）"): right / L}
    if recompute != "none":
        out[("recomputation ignored", "忽略了重计算")] = korthikanti(s, b, h, a, L, t, sp, "none")
    if sp:
        out[("sequence parallelism ignored", "忽略了序列并行")] = korthikanti(s, b, h, a, L, t, False, recompute)
    return {k: f64(v) for k, v in out.items()}


@pytest.mark.weight(3)
@given(config=config_strategy(), s=st.sampled_from([512, 2048, 4096, 32768]), b=st.integers(1, 16),
       t=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 8]), sp=st.booleans(),
       recompute=st.sampled_from(["none", "selective", "full"]))
def test_activation_bytes_follow_korthikanti_table_2(impl, config, s, b, t, pp, sp, recompute):
    h, a, L = config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]
    got = impl(MODULE).activation_bytes(config, seq_len=s, micro_batch=b, tp=t, pp=pp,
                                        sequence_parallel=sp, recompute=recompute)
    assert_close(f64(float(got)), f64(korthikanti(s, b, h, a, L, t, sp, recompute)),
                 name=(f"activation bytes (s={s} b={b} tp={t} pp={pp} sp={sp} recompute={recompute})",
                       f"激活字节数（s={s} b={b} tp={t} pp={pp} sp={sp} recompute={recompute}）"),
                 mistakes=activation_mistakes(s, b, h, a, L, t, pp, sp, recompute))


def test_activation_bytes_reject_unknown_recomputation(impl):
    with pytest.raises(ValueError):
        impl(MODULE).activation_bytes({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2},
                                      seq_len=8, micro_batch=1, recompute="partial")


# ---- KV cache ------------------------------------------------------------------------------------

def kv_reference(c: dict, tokens: int, s: int, tp: int) -> int:
    L = c["num_hidden_layers"]
    if "kv_lora_rank" in c:
        return L * (c["kv_lora_rank"] + c.get("qk_rope_head_dim", 0)) * tokens * s
    d = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    heads = max(c["num_key_value_heads"] // tp, 1)
    return 2 * L * heads * d * tokens * s


def kv_mistakes(c: dict, tokens: int, s: int, tp: int) -> dict:
    right = kv_reference(c, tokens, s, tp)
    out = {("K only (the factor 2 for K and V forgotten)",
            "只算了 K（忘了 K 和 V 的因子 2）"): right // 2 if "kv_lora_rank" not in c else right * 2,
           ("tensor parallelism ignored (all KV heads on every GPU)",
            "忽略了张量并行（每块 GPU 放全部 KV 头）"): kv_reference(c, tokens, s, 1)}
    if "kv_lora_rank" not in c:
        out[("query heads used instead of KV heads", "用了查询头数而不是 KV 头数")] = kv_reference(
            {**c, "num_key_value_heads": c["num_attention_heads"]}, tokens, s, tp)
        out[("dtype size ignored", "忽略了 dtype 的字节数")] = right // s
    return out


@pytest.mark.weight(3)
@given(config=config_strategy(), tokens=st.integers(1, 10**6), tp=st.sampled_from([1, 2, 4, 8]),
       dtype=st.sampled_from([torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn]))
def test_kv_cache_bytes_of_mha_and_gqa(impl, config, tokens, tp, dtype):
    a_kv = config["num_key_value_heads"]
    if a_kv % tp and tp % a_kv:
        tp = 1
    assert_equal(impl(MODULE).kv_cache_bytes(config, tokens, dtype=dtype, tp=tp),
                 kv_reference(config, tokens, dtype.itemsize, tp),
                 name=(f"KV cache bytes ({a_kv} KV heads, tp={tp}, {dtype}, {tokens} tokens)",
                       f"KV cache 字节数（{a_kv} 个 KV 头，tp={tp}，{dtype}，{tokens} 个 token）"),
                 mistakes=kv_mistakes(config, tokens, dtype.itemsize, tp))


@pytest.mark.parametrize("tp", [1, 4, 16])
def test_kv_cache_bytes_of_mla_are_replicated_across_tp(impl, tp):
    config = {"vocab_size": 102400, "hidden_size": 5120, "intermediate_size": 12288, "num_hidden_layers": 60,
              "num_attention_heads": 128, "num_key_value_heads": 128, "tie_word_embeddings": False,
              "kv_lora_rank": 512, "qk_rope_head_dim": 64}                              # DeepSeek-V2
    assert_equal(impl(MODULE).kv_cache_bytes(config, 1000, dtype=torch.bfloat16, tp=tp), 60 * 576 * 1000 * 2,
                 name=(f"MLA cache of 1000 bf16 tokens, tp={tp}",
                       f"1000 个 bf16 token 的 MLA cache，tp={tp}"), mistakes=kv_mistakes(config, 1000, 2, tp))


def test_kv_heads_fewer_than_tp_ranks_are_replicated(impl):
    config = {"vocab_size": 10, "hidden_size": 512, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 8, "num_key_value_heads": 2, "tie_word_embeddings": False}
    assert_equal(impl(MODULE).kv_cache_bytes(config, 10, dtype=torch.float16, tp=8), 2 * 2 * 1 * 64 * 10 * 2,
                 name=("KV cache per GPU, 2 KV heads over 8 ranks (one replicated head each)",
                       "每张 GPU 的 KV cache，2 个 KV 头分到 8 个 rank（每个 rank 复制一个头）"),
                 mistakes=kv_mistakes(config, 10, 2, 8))
    with pytest.raises(ValueError):
        impl(MODULE).kv_cache_bytes({**config, "num_key_value_heads": 3}, 10, tp=2)
