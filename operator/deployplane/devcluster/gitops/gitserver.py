"""The dev cluster's git server: git's own `git http-backend` behind a small HTTP server.

Flux accepts only http(s) and ssh git URLs, and Argo CD's repo-server clones with the
git CLI, so both need a real smart-HTTP server; git ships one as a CGI program. This
module is that CGI's host: every request becomes one `git http-backend` process with
the CGI environment, its request body piped in (`Content-Length`, or chunked as git
sends a large push), its headers turned into the HTTP answer. Every bare repository
under the root is served at `/<name>.git` the moment it exists (GIT_HTTP_EXPORT_ALL),
for fetch and push (http.receivepack, which http-backend otherwise enables only for an
authenticated REMOTE_USER). It listens on 127.0.0.1 only and trusts every caller, as
the dev cluster's apiserver trusts its admin kubeconfig's holder.

Run as `python -m deployplane.devcluster.gitops.gitserver --root DIR --port N`.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO

READY_LINE = "git server listening on"
_CHUNK = 64 * 1024


def backend_env(root: Path, handler: BaseHTTPRequestHandler) -> dict[str, str]:
    """The CGI environment of one request (RFC 3875, plus what http-backend reads)."""
    path, _, query = handler.path.partition("?")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        # Anonymous push: http-backend enables receive-pack by default only when
        # REMOTE_USER is set.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.receivepack",
        "GIT_CONFIG_VALUE_0": "true",
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_PROTOCOL": handler.request_version,
        "REQUEST_METHOD": handler.command,
        "PATH_INFO": urllib.parse.unquote(path),
        "QUERY_STRING": query,
        "REMOTE_ADDR": handler.client_address[0],
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
    }
    length = handler.headers.get("Content-Length")
    if length is not None:
        env["CONTENT_LENGTH"] = length
    # Without CONTENT_LENGTH http-backend reads the body until EOF (a chunked push).
    encoding = handler.headers.get("Content-Encoding")
    if encoding:
        env["HTTP_CONTENT_ENCODING"] = encoding
    protocol = handler.headers.get("Git-Protocol")
    if protocol:
        env["GIT_PROTOCOL"] = protocol
    return env


def _copy_body(handler: BaseHTTPRequestHandler, sink: IO[bytes]) -> None:
    """The request body into `sink`, de-chunked; then close it (the CGI's EOF)."""
    try:
        if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(handler.rfile.readline().split(b";", 1)[0].strip(), 16)
                if size == 0:
                    handler.rfile.readline()  # the empty line after the last chunk
                    break
                sink.write(handler.rfile.read(size))
                handler.rfile.readline()  # CRLF closing the chunk
        else:
            remaining = int(handler.headers.get("Content-Length") or 0)
            while remaining > 0:
                data = handler.rfile.read(min(_CHUNK, remaining))
                if not data:
                    break
                sink.write(data)
                remaining -= len(data)
    except (BrokenPipeError, ValueError):
        pass  # the backend stopped reading (it answered an error) or a malformed chunk
    finally:
        with contextlib.suppress(BrokenPipeError):
            sink.close()


class GitHandler(BaseHTTPRequestHandler):
    """One HTTP request, answered by one `git http-backend`."""

    server: GitServer

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _backend(self) -> None:
        proc = subprocess.Popen(
            [self.server.git, "http-backend"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            env=backend_env(self.server.root, self),
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        feeder = threading.Thread(target=_copy_body, args=(self, proc.stdin), daemon=True)
        feeder.start()
        status, headers = _cgi_headers(proc.stdout)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        # HTTP/1.0: the answer ends when the connection closes, so no length is needed.
        shutil.copyfileobj(proc.stdout, self.wfile, _CHUNK)
        feeder.join()
        proc.wait()


def _cgi_headers(out: IO[bytes]) -> tuple[int, list[tuple[str, str]]]:
    """The CGI's header block: its `Status` (200 when absent) and the other headers."""
    status, headers = 200, []
    for raw in iter(out.readline, b""):
        line = raw.decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        else:
            headers.append((name.strip(), value.strip()))
    return status, headers


class GitServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, port: int, git: str) -> None:
        super().__init__(("127.0.0.1", port), GitHandler)
        self.root = root
        self.git = git


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="directory of bare repositories")
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 (0: any)")
    args = parser.parse_args(argv)
    git = shutil.which("git")
    if git is None:
        parser.error("git is not installed (tools/gitops/build.sh installs it)")
    args.root.mkdir(parents=True, exist_ok=True)
    server = GitServer(args.root.resolve(), args.port, git)
    print(f"{READY_LINE} http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":  # pragma: no cover
    main()
