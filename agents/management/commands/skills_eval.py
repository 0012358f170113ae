"""`manage.py skills_eval`: Django finds commands here; the command lives with the evals (agents/evals/command.py)."""

from agents.evals.command import Command

__all__ = ["Command"]
