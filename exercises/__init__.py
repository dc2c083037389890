"""The course's modules (exercises)."""
