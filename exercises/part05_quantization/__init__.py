"""Part 05: quantisation: absmax / zero-point / int4 / fp8, and GPTQ."""
