"""Messages of the Part 04 paged_kv and speculative tests' checks. Keys: ``part04.kv.*``, ``part04.spec.*``."""

MESSAGES = {
    "part04.kv.six_tokens_two_blocks": (
        "6 tokens in blocks of 4 need 2 blocks, the table has {got}",
        "6 个 token、每块 4 个需要 2 个块，块表里有 {got} 个",
    ),
    "part04.kv.fork_shares": (
        "a fork shares its parent's blocks without copying",
        "fork 与父序列共享块，不复制",
    ),
    "part04.kv.cow_short_fork_needs_copy": (
        "appending to a sequence whose only, partly filled block is shared needs 1 block (the copy-on-write; "
        "it is needed for a fork shorter than one block too)",
        "向唯一且未写满的块被共享的序列追加需要 1 个块（写时复制；fork 短于一个块时也需要）",
    ),
    "part04.kv.cow_short_fork_skipped": (
        "copy-on-write skipped for a fork shorter than one block: the parent wrote into the block its child reads "
        "(both tables {table})",
        "fork 短于一个块时跳过了写时复制：父序列写进了子序列正在读的块（两者的块表都是 {table}）",
    ),
    "part04.kv.full_block_stays_shared": (
        "copy-on-write of a full last block: the append starts a new block, the full block stays shared "
        "(child's table {table}, shared block {shared}, its ref_count {refs})",
        "写满的最后一块的写时复制：追加应开一个新块，写满的块保持共享"
        "（子序列块表 {table}，共享块 {shared}，其引用计数 {refs}）",
    ),
    "part04.kv.fits_last_block": (
        "2 tokens fit in the 2 free slots of the last block: 0 blocks needed, got {got}",
        "最后一块的 2 个空位放得下 2 个 token：需要 0 个块，实际是 {got}",
    ),
    "part04.kv.refused_with_room": (
        "append of {tokens} tokens needing {needed} blocks was refused with {free} free: refuse only when "
        "blocks_needed > free blocks (not >=)",
        "追加 {tokens} 个 token 需要 {needed} 个块，有 {free} 个空闲却被拒绝：只有 blocks_needed > 空闲块数时才拒绝（不是 >=）",
    ),
    "part04.kv.half_block_copy": (
        "appending 1 token into a shared half-full block needs 1 block (the copy), got {got}",
        "向共享且半满的块追加 1 个 token 需要 1 个块（复制），实际是 {got}",
    ),
    "part04.kv.full_shared_no_copy": (
        "the full shared block must stay shared (no copy): the child's first block is {got}, expected {expected}",
        "写满的共享块必须保持共享（不复制）：子序列的第一个块是 {got}，应为 {expected}",
    ),
    "part04.kv.ref_counts_after_copy": (
        "ref counts of (the full shared block, the copied block's original): expected {expected}, got {got}",
        "（写满的共享块，被复制块的原块）的引用计数：应为 {expected}，实际是 {got}",
    ),
    "part04.kv.copy_owned_once": (
        "after the copy, the old and the new block each belong to one sequence: ref counts {got}, expected [1, 1]",
        "复制之后，旧块和新块各属于一个序列：引用计数为 {got}，应为 [1, 1]",
    ),
    "part04.kv.free_after_copy": (
        "1 block + 1 copy taken from 4, yet {got} are free (expected 2)",
        "从 4 个块中取走 1 个块加 1 个副本，却有 {got} 个空闲（应为 2）",
    ),
    "part04.kv.full_blocks_shared": (
        "the full blocks stay shared by parent and child: ref counts {got}, expected [2, 2]",
        "写满的块由父子序列共享：引用计数为 {got}，应为 [2, 2]",
    ),
    "part04.kv.free_count": (
        "{got} free blocks, but {used} of {total} are in use",
        "有 {got} 个空闲块，但 {total} 个块中有 {used} 个在用",
    ),
    "part04.kv.seq_len": (
        "sequence {seq}: seq_len() is {got}, {expected} tokens were appended",
        "序列 {seq}：seq_len() 为 {got}，但追加了 {expected} 个 token",
    ),
    "part04.kv.table_len": (
        "sequence {seq}: table of {got} blocks, expected {expected}",
        "序列 {seq}：块表有 {got} 个块，应为 {expected} 个",
    ),
    # speculative
    "part04.spec.int64": (
        "int64 outputs expected, got output_tokens {tokens} and num_accepted {accepted}",
        "输出应为 int64，实际 output_tokens 为 {tokens}，num_accepted 为 {accepted}",
    ),
    "part04.spec.tokens_per_step": (
        "expected_tokens_per_step({alpha}, {k}): expected {expected}, got {got} ({note})",
        "expected_tokens_per_step({alpha}, {k})：应为 {expected}，实际是 {got}（{note}）",
    ),
    "part04.spec.sum_half": ("1 + 0.5 + 0.25 + 0.125", "1 + 0.5 + 0.25 + 0.125（等比数列求和）"),
    "part04.spec.alpha_one": (
        "alpha = 1: all K drafts and the bonus",
        "alpha = 1：全部 K 个草稿加上额外的一个",
    ),
    "part04.spec.alpha_zero": (
        "alpha = 0: only the target's token",
        "alpha = 0：只有目标模型的 token",
    ),
    "part04.kv.blocks_needed": (
        "blocks_needed({seq}, {tokens}) with {length} tokens in blocks of {block_size} (last block {shared}): "
        "expected {expected}, got {got}",
        "blocks_needed({seq}, {tokens})，已有 {length} 个 token、每块 {block_size} 个（最后一块{shared}）："
        "应为 {expected}，实际是 {got}",
    ),
    "part04.kv.shared": ("shared", "被共享"),
    "part04.kv.not_shared": ("not shared", "未被共享"),
    "part04.kv.child_wrote_shared": (
        "the child wrote into the block it shares with its parent",
        "子序列写进了它与父序列共享的块",
    ),
    "part04.kv.short_fork_wrote_shared": (
        "after a fork of {length} tokens (less than one block of 4), the {writer} appended into the block it shares "
        "(block table {table}, shared block {shared}); the other sequence now reads K {read} tokens long",
        "在 fork 了 {length} 个 token（不足一个 4 token 的块）之后，{writer}追加进了共享的块"
        "（块表 {table}，共享块 {shared}）；另一个序列现在读到的 K 有 {read} 个 token",
    ),
    "part04.kv.parent": ("parent", "父序列"),
    "part04.kv.child": ("child", "子序列"),
    "part04.kv.boundary_fork_append": (
        "the child's append after a fork of 2 full blocks {full}: child's table {table}, {free} blocks free "
        "(expected {full} + 1 new block, 2 free)",
        "fork 了 2 个满块 {full} 之后子序列的追加：子序列块表为 {table}，空闲 {free} 个块（应为 {full} 加 1 个新块，空闲 2 个）",
    ),
    "part04.kv.free_after_parent_freed": (
        "after freeing the parent of a fork, {got} blocks are free, expected 4",
        "释放 fork 的父序列后空闲块为 {got} 个，应为 4 个",
    ),
    "part04.kv.failed_append_changed": (
        "{what} changed the cache's {key}: {before} -> {after}",
        "{what}改变了缓存的 {key}：{before} -> {after}",
    ),
    "part04.kv.a_failed_append": ("a failed append", "一次失败的 append "),
    "part04.kv.refused_fitting": (
        "{what}: append of {tokens} tokens raised MemoryError ({error}) with {free} blocks free, enough for it",
        "{what}：追加 {tokens} 个 token 时抛出了 MemoryError（{error}），而空闲的 {free} 个块足够",
    ),
    "part04.kv.no_memory_error": (
        "append of {tokens} tokens needed {need} blocks with {free} free, yet did not raise MemoryError",
        "追加 {tokens} 个 token 需要 {need} 个块，只有 {free} 个空闲，却没有抛出 MemoryError",
    ),
    "part04.kv.full_blocks_moved": (
        "append to sequence {seq} changed its full blocks: {before} -> {after}",
        "向序列 {seq} 追加改变了它的满块：{before} -> {after}",
    ),
    "part04.kv.blocks_taken": (
        "append of {tokens} tokens to sequence {seq} ({length} tokens, table {table}) took {taken} blocks from the "
        "free list, expected {need}",
        "向序列 {seq}（{length} 个 token，块表 {table}）追加 {tokens} 个 token 从空闲列表取走了 {taken} 个块，应为 {need} 个",
    ),
    "part04.kv.ref_count_vs_tables": (
        "block {block} has ref_count {got} but {holders} tables hold it",
        "块 {block} 的 ref_count 为 {got}，但有 {holders} 个块表持有它",
    ),
    "part04.spec.accepted_range": (
        "num_accepted outside 0..{k}: {got}",
        "num_accepted 超出了 0..{k}：{got}",
    ),
    "part04.spec.accepted_not_drafts": (
        "the first num_accepted output tokens of a row are not its draft tokens",
        "某行输出的前 num_accepted 个 token 不是它的草稿 token",
    ),
    "part04.spec.no_token_after": (
        "row {row}: no token after its {accepted} accepted draft tokens",
        "第 {row} 行：在 {accepted} 个被接受的草稿 token 之后没有 token",
    ),
    "part04.spec.tail_not_padded": (
        "tokens after the resampled or bonus token are not -1",
        "重采样或额外 token 之后的位置不是 -1",
    ),
    "part04.spec.mean_tokens": (
        "mean tokens per step {mean:.4f}, expected (1 - a^(K+1)) / (1 - a) = {expected:.4f} (a = {alpha:.4f}, "
        "K = {k}); a correct sampler is within {bound:.4f} with probability > 1 - 1e-9",
        "每步平均 token 数为 {mean:.4f}，应为 (1 - a^(K+1)) / (1 - a) = {expected:.4f}（a = {alpha:.4f}，K = {k}）；"
        "正确的采样器以大于 1 - 1e-9 的概率落在 {bound:.4f} 之内",
    ),
    "part04.spec.row_outcome": (
        "draft {draft}: output {got} with {accepted} accepted, expected {expected} with {want_accepted}",
        "草稿 {draft}：输出 {got}，接受了 {accepted} 个；应为 {expected}，接受 {want_accepted} 个",
    ),
    "part04.spec.tokens_per_step_value": (
        "expected_tokens_per_step({alpha}, {k}) = {got}, expected {expected}",
        "expected_tokens_per_step({alpha}, {k}) = {got}，应为 {expected}",
    ),
    "part04.kv.what_fork_append": (
        "the {writer}'s append after a fork of {length} tokens",
        "fork 了 {length} 个 token 之后{writer}的追加",
    ),
    "part04.kv.what_boundary_append": (
        "the child's append after a fork at a block boundary",
        "在块边界 fork 之后子序列的追加",
    ),
    "part04.kv.what_last_slots": (
        "with no free block, 3 tokens into the 3 free slots of the last block",
        "没有空闲块时，把 3 个 token 放进最后一块的 3 个空位",
    ),
    "part04.kv.what_one_free_block": (
        "3 tokens needing the 1 free block",
        "需要那 1 个空闲块的 3 个 token",
    ),
    "part04.kv.what_sequence": (
        "sequence {seq} of {length} tokens",
        "有 {length} 个 token 的序列 {seq}",
    ),
}
