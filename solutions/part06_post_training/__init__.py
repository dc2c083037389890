"""Part 06: post-training: SFT, LoRA, preference optimisation (DPO, IPO, cDPO) and RL (GRPO, PPO)."""
