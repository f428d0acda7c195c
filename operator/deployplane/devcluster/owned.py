"""Stopping the clusters this process owns at exit and on SIGTERM / SIGHUP.

A process-wide registry is the one place signal handlers and atexit can find the
clusters to stop; it only ever holds clusters this process started and owns.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType
from typing import Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


_owned: set[Stoppable] = set()
_registry_lock = threading.Lock()
_hooks_installed = False


def _stop_owned() -> None:
    for cluster in list(_owned):
        cluster.stop()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_owned()
    # Then die of the same signal, as the process would have without us.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def register(cluster: Stoppable) -> None:
    global _hooks_installed
    with _registry_lock:
        _owned.add(cluster)
        if _hooks_installed:
            return
        _hooks_installed = True
        atexit.register(_stop_owned)
        # SIGINT already unwinds as KeyboardInterrupt (context managers, fixtures);
        # SIGTERM and SIGHUP would end the process without running any cleanup.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) is signal.SIG_DFL:
                    signal.signal(sig, _on_signal)


def unregister(cluster: Stoppable) -> None:
    with _registry_lock:
        _owned.discard(cluster)
