"""Part 01: the transformer, one module at a time."""
