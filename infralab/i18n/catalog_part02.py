"""Messages of the Part 02 collectives tests. Keys: ``part02.collectives.*``."""

MESSAGES = {
    "part02.collectives.ring_total": (
        "all ranks together sent {total} elements; a ring sends 2(n-1) x numel = {expected}",
        "所有 rank 一共发送了 {total} 个元素；环形算法发送 2(n-1) x numel = {expected} 个",
    ),
    "part02.collectives.all_to_all_peers": (
        "rank {rank} sent to {got}; all-to-all sends one chunk to every other rank ({expected})",
        "rank {rank} 发送给了 {got}；all-to-all 要给每个其他 rank 各发一个块（{expected}）",
    ),
    "part02.collectives.all_to_all_sizes": (
        "rank {rank} sent messages of sizes {got}; each chunk holds {expected} elements",
        "rank {rank} 发送的消息大小为 {got}；每个块应有 {expected} 个元素",
    ),
    "part02.collectives.silent_rank": (
        "some rank sent or received nothing (messages sent per rank {sends}, received {recvs}): the ring's messages "
        "must be point-to-point sends and receives",
        "有 rank 没有发送或接收任何消息（每个 rank 发送 {sends} 条，接收 {recvs} 条）：环形算法的消息必须是点对点的收发",
    ),
    "part02.collectives.bandwidth_pair": (
        "expected (algbw, busbw), got {got}",
        "应返回 (algbw, busbw)，实际是 {got}",
    ),
    "part02.collectives.chunk_list": (
        "rank {rank}: expected a list of {n} tensors, got {got}",
        "rank {rank}：应返回由 {n} 个张量组成的 list，实际是 {got}",
    ),
    "part02.zero.flat_not_tensor": (
        "expected a 1-D tensor, got {got}",
        "应返回一维张量，实际是 {got}",
    ),
    "part02.zero.step_triple": (
        "rank {rank}: expected (flat_param, exp_avg, exp_avg_sq), got {got}",
        "rank {rank}：应返回 (flat_param, exp_avg, exp_avg_sq)，实际是 {got}",
    ),
    "part02.zero.rank_result": (
        "{where}rank {rank}: expected (flat_param, exp_avg, exp_avg_sq), got {type}",
        "{where}rank {rank}：应返回 (flat_param, exp_avg, exp_avg_sq)，实际为 {type}",
    ),
    "part02.zero.whole_buffer": (
        "{where}rank {rank}: expected the whole padded buffer of {elements} elements",
        "{where}rank {rank}：应返回完整的填充后缓冲区，共 {elements} 个元素",
    ),
}
