"""Is the dev cluster's apiserver up yet: admin GETs over TLS, and a startup wait.

A server that exits while we wait is reported with the end of its log; one that exited
because its port was taken raises `PortTaken`, which `DevCluster.start` retries.
"""

from __future__ import annotations

import http.client
import ssl
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from deployplane.devcluster import processes
from deployplane.devcluster.errors import DevClusterError, PortTaken
from deployplane.devcluster.pki import PkiFiles
from deployplane.devcluster.processes import ServerProcess


def admin_ssl_context(pki: PkiFiles) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
    ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return ctx


def get_status(server: str, path: str, ctx: ssl.SSLContext, timeout: float = 2.0) -> int:
    """HTTP status of an admin GET, or 0 when the apiserver does not answer yet."""
    port = int(server.rsplit(":", 1)[1])
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def check_alive(procs: Sequence[ServerProcess]) -> None:
    """Raise if a server has exited (`PortTaken` if it lost the race for its port)."""
    for proc in procs:
        if not proc.alive():
            tail = processes.log_tail(proc.log)
            error = PortTaken if "address already in use" in tail else DevClusterError
            raise error(f"{proc.name} exited during startup; last lines of {proc.log}:\n{tail}")


def wait_ok(
    server: str,
    ctx: ssl.SSLContext,
    paths: Sequence[str],
    deadline: float,
    timeout: float,
    alive: Callable[[], None],
    logs: Path,
) -> None:
    """Return once every admin GET of `paths` answers 200, in order; `alive` raises if a
    server died; past `deadline` (`timeout` after the start) raise with the end of the
    apiserver's log from the directory `logs`."""
    for path in paths:
        while get_status(server, path, ctx) != 200:
            alive()
            if time.monotonic() > deadline:
                raise DevClusterError(
                    f"{path} not ok after {timeout:.0f}s; logs in {logs}:\n"
                    + processes.log_tail(logs / "kube-apiserver.log")
                )
            time.sleep(0.05)
