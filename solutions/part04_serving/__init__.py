"""Part 04: serving: paged KV cache and paged attention."""
