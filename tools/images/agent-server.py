"""The agent server of a deployplane-built image: the vendor's public server
(`langgraph_api`, in-memory runtime), serving the graphs of $LANGSERVE_GRAPHS (set by
the remote build to their /deps/ paths) on $PORT (8000) of every address, no reload.
What `langgraph dev` runs, without its config file, browser or tunnel.

The in-memory runtime keeps its files (`.langgraph_api/`) in the working directory, which
the image's user cannot write (/deps is root's): the server runs in
$LANGGRAPH_DATA_DIR (/tmp/langgraph-api) instead; the graphs are loaded by their
absolute paths and the project's directories are on sys.path (a .pth file).

At SIGTERM uvicorn stops accepting, waits for the requests in flight (a stream too) at
most $DEPLOYPLANE_DRAIN_SECONDS (15), then ends the server's lifespan, where the
runtime writes its files a last time: bounded, so that final write happens within the
pod's grace period even while a client keeps a stream open."""

import json
import os

from langgraph_api.cli import run_server

if __name__ == "__main__":
    data_dir = os.environ.get("LANGGRAPH_DATA_DIR", "/tmp/langgraph-api")  # noqa: S108
    os.makedirs(data_dir, exist_ok=True)
    os.chdir(data_dir)
    run_server(
        host=os.environ.get("HOST", "0.0.0.0"),  # noqa: S104 (a pod's server)
        port=int(os.environ.get("PORT", "8000")),
        reload=False,
        graphs=json.loads(os.environ.get("LANGSERVE_GRAPHS") or "{}"),
        runtime_edition="inmem",
        server_level=os.environ.get("LANGGRAPH_SERVER_LOG_LEVEL", "INFO"),
        timeout_graceful_shutdown=int(os.environ.get("DEPLOYPLANE_DRAIN_SECONDS", "15")),
    )
