"""Part 00: foundations: rooflines, number formats, memory budgets."""
