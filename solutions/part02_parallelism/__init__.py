"""Part 02: parallelism (collectives, ZeRO)."""
