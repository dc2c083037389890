"""Messages of the multi-rank harness (infralab.distributed). Keys: ``distributed.*``."""

MESSAGES = {
    "distributed.bad_backend": (
        "backend must be 'sim', 'gloo' or 'nccl', got {backend}",
        "backend 应为 'sim'、'gloo' 或 'nccl'，实际为 {backend}",
    ),
    "distributed.wrong_arg_count": (
        "{name}: {got} argument tuples for {n} ranks",
        "{name}：给了 {got} 组参数，但有 {n} 个 rank",
    ),
    "distributed.no_run_ranks": (
        "this grading mode cannot run multi-rank exercises yet (its target has no run_ranks)",
        "此评分模式暂不能运行多 rank 练习（其 target 没有 run_ranks）",
    ),
    "distributed.bad_peer": (
        "{name}={peer} is not a rank of this group (world size {n})",
        "{name}={peer} 不是本通信组的 rank（world size 为 {n}）",
    ),
    "distributed.self_peer": (
        "rank {rank} sends to or receives from itself ({name}={peer})",
        "rank {rank} 在给自己发送或从自己接收（{name}={peer}）",
    ),
    "distributed.not_a_tensor": (
        "dist.{call} expects a tensor, got {got}",
        "dist.{call} 需要一个张量，实际得到 {got}",
    ),
    "distributed.recv_any_source": (
        "recv without src (from any rank) is not supported here: name the source rank",
        "这里不支持不指定 src 的 recv（从任意 rank 接收）：请写明源 rank",
    ),
    "distributed.p2p_sizes_differ": (
        "rank {dst} posted recv(src={src}) for {posted} {posted_dtype} elements but rank {src} sent {sent} "
        "{sent_dtype} elements (the two ends of a message must agree on numel and dtype)",
        "rank {dst} 为 recv(src={src}) 准备了 {posted} 个 {posted_dtype} 元素，但 rank {src} 发送了 {sent} 个 "
        "{sent_dtype} 元素（一条消息两端的元素个数和 dtype 必须一致）",
    ),
    "distributed.collective_not_allowed": (
        "dist.{name} is not allowed in this exercise: build it from send/recv",
        "本练习不允许调用 dist.{name}：请用 send/recv 自己实现",
    ),
    "distributed.collective_names_differ": (
        "collective call #{index} differs between ranks ({listed}): every rank must call the same collectives "
        "in the same order",
        "第 {index} 次集合通信在各 rank 上不同（{listed}）：所有 rank 必须按相同顺序调用相同的集合通信",
    ),
    "distributed.collective_sizes_differ": (
        "dist.{name}: the ranks pass tensors of different sizes ({listed}); every rank must pass the same "
        "numel and dtype",
        "dist.{name}：各 rank 传入的张量大小不同（{listed}）；每个 rank 的元素个数和 dtype 必须相同",
    ),
    "distributed.collective_pair_differs": (
        "dist.{name}: rank {dst} expects {expected} {dst_dtype} elements from rank {src}, which sends it {sent} "
        "{src_dtype} elements",
        "dist.{name}：rank {dst} 期望从 rank {src} 收到 {expected} 个 {dst_dtype} 元素，而 rank {src} 发给它 "
        "{sent} 个 {src_dtype} 元素",
    ),
    "distributed.collective_uneven": (
        "dist.{name}: without split sizes the buffers must divide evenly by the world size",
        "dist.{name}：不给 split sizes 时，缓冲区大小必须能被 world size 整除",
    ),
    "distributed.gather_output_size": (
        "all_gather_into_tensor: the output has {got} elements, not world_size ({n}) x the input ({part})",
        "all_gather_into_tensor：输出有 {got} 个元素，不等于 world_size（{n}）× 输入（{part}）",
    ),
    "distributed.scatter_input_size": (
        "reduce_scatter_tensor: the input has {got} elements, not world_size ({n}) x the output ({part})",
        "reduce_scatter_tensor：输入有 {got} 个元素，不等于 world_size（{n}）× 输出（{part}）",
    ),
    "distributed.deadlock": (
        "deadlock: every rank is waiting ({blocked})",
        "死锁：所有 rank 都在等待（{blocked}）",
    ),
    "distributed.waited_too_long": (
        "rank {rank} waited {seconds} s in {what}",
        "rank {rank} 在 {what} 中等待了 {seconds} 秒",
    ),
    "distributed.sim_ranks_running": (
        "{name} on the simulated group: ranks {ranks} did not return within {seconds} s",
        "{name} 在模拟通信组上：rank {ranks} 在 {seconds} 秒内没有返回",
    ),
    "distributed.sim_threads_only": (
        "torch.distributed is simulated for the ranks' threads only",
        "torch.distributed 只在各 rank 的线程里被模拟",
    ),
    "distributed.sim_reduce_op": (
        "the simulated group implements {name} with SUM, AVG, MAX, MIN and PRODUCT only, got {op}",
        "模拟通信组的 {name} 只支持 SUM、AVG、MAX、MIN 和 PRODUCT，实际为 {op}",
    ),
    "distributed.sim_unsupported": (
        "dist.{name} is not available in the simulated group",
        "模拟通信组不提供 dist.{name}",
    ),
    "distributed.no_gloo": (
        "this torch has no gloo backend",
        "此 torch 没有 gloo 后端",
    ),
    "distributed.nccl_no_gpu": (
        "NCCL needs CUDA GPUs; this machine has none",
        "NCCL 需要 CUDA GPU；本机没有",
    ),
    "distributed.nccl_not_built": (
        "this torch was built without NCCL",
        "此 torch 编译时未带 NCCL",
    ),
    "distributed.nccl_too_few_gpus": (
        "NCCL runs one process per GPU: {n} ranks need {n} GPUs, this machine has {gpus}",
        "NCCL 每个 GPU 一个进程：{n} 个 rank 需要 {n} 块 GPU，本机只有 {gpus} 块",
    ),
    "distributed.rank_died": (
        "the rank's process died without an answer (exit code {code})",
        "该 rank 的进程没有返回结果就退出了（退出码 {code}）",
    ),
    "distributed.ranks_did_not_finish": (
        "ranks {ranks} did not finish within {seconds} s on {backend}: a deadlock (e.g. every rank calls "
        "dist.send before anyone receives) or an endless loop",
        "rank {ranks} 在 {backend} 上 {seconds} 秒内没有结束：死锁（例如所有 rank 都先 dist.send 再接收）或死循环",
    ),
    "distributed.traffic_differs": (
        "{name}: rank {rank} communicated {got}; expected {expected}",
        "{name}：rank {rank} 的通信为 {got}；应为 {expected}",
    ),
    "distributed.ring_used_collectives": (
        "{where} called library collectives {names}",
        "{where} 调用了库里的集合通信 {names}",
    ),
    "distributed.ring_message_too_big": (
        "{where} moved {size} elements in one message; a ring moves one chunk ({small} or {large} of {numel}) "
        "per message",
        "{where} 一条消息传了 {size} 个元素；环形算法每条消息只传一个块（{numel} 个中的 {small} 或 {large} 个）",
    ),
    "distributed.ring_all_to_one": (
        "the whole tensor is sent at once (an all-to-one reduction or a broadcast, not a ring)",
        "整个张量一次发出（这是汇总到一个 rank 再广播的 all-to-one 规约，不是环）",
    ),
    "distributed.ring_strangers": (
        "{where} talked to ranks {strangers}; in a ring it sends only to rank {nxt} and receives only from "
        "rank {prev}",
        "{where} 与 rank {strangers} 通信了；环中它只应发给 rank {nxt}、只从 rank {prev} 接收",
    ),
    "distributed.ring_not_neighbours": (
        "not a ring: messages go to other ranks than the neighbours",
        "不是环：消息发给了相邻 rank 以外的 rank",
    ),
    "distributed.ring_message_count": (
        "{where} sent {sent} and received {received} messages; expected {want} of each ({phases} phase(s) of "
        "n - 1 = {n1} steps)",
        "{where} 发送了 {sent} 条、接收了 {received} 条消息；各应为 {want} 条（{phases} 个阶段，每阶段 n - 1 = {n1} 步）",
    ),
    "distributed.ring_n_steps": (
        "{n} steps per phase instead of n - 1 = {n1}",
        "每个阶段走了 {n} 步，而不是 n - 1 = {n1} 步",
    ),
    "distributed.ring_message_too_small": (
        "{where} moved a message of {size} elements; chunks hold {small} or {large}",
        "{where} 传了一条 {size} 个元素的消息；块的大小应为 {small} 或 {large}",
    ),
    "distributed.codec_dict_keys": (
        "only dicts with string keys cross between processes",
        "只有以字符串为键的 dict 能在进程之间传递",
    ),
    "distributed.codec_not_data": (
        "a {type} cannot cross between processes (data only)",
        "{type} 不能在进程之间传递（只能传数据）",
    ),
}
