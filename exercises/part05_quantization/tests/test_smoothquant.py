"""Visible tests for part05_quantization.smoothquant."""
