"""Renderings of the result record: terminal tables, and the grading outputs."""
