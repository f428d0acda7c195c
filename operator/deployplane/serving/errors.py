"""What a program says when it cannot start."""

from __future__ import annotations

__all__ = ["StartupError"]


class StartupError(Exception):
    """A program (or a part of one) cannot start; the message is one line for the user."""
