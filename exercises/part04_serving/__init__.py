"""Part 04: serving: paged KV cache, paged attention, scheduling, prefix caching, speculative decoding."""
