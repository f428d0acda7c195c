"""Listener's externals: diff (pure, the PATCH) and client (the calls)."""

from deployplane.externals.listener.client import ListenerConnecter, ListenerExternal
from deployplane.externals.listener.diff import ListenerDelta, diff

__all__ = ["ListenerConnecter", "ListenerDelta", "ListenerExternal", "diff"]
