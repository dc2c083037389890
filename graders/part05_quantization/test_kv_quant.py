"""Hidden tests for part05_quantization.kv_quant."""
