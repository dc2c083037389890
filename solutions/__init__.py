"""The course's modules (solutions)."""
