"""infralab: the exercise and auto-grading kit of an LLM-infrastructure course."""
__version__ = "0.1.0"
