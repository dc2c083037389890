"""Part 06: post-training: preference optimisation (DPO, IPO, conservative DPO)."""
