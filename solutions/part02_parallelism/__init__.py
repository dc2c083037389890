"""Part 02: parallelism (collectives, ZeRO, topology, tensor parallelism)."""
