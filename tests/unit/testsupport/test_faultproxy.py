"""The e2e suites' fault proxy (tests/support/faultproxy.py), against a tiny upstream:
forwarding, injected errors that are never performed, held answers that are, and the
request counts by route template."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest
from tests.support.faultproxy import FaultProxy, route_template

DEP = "11111111-1111-4111-8111-111111111111"
REV = "22222222-2222-4222-8222-222222222222"


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    performed: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        Upstream.performed.append((self.command, self.path))
        payload = json.dumps({"path": self.path, "body": body.decode()}).encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    Upstream.performed = []
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    fault_proxy = FaultProxy(f"http://127.0.0.1:{upstream.server_address[1]}").start()
    yield fault_proxy
    fault_proxy.stop()
    upstream.shutdown()
    upstream.server_close()


def test_route_templates_replace_ids() -> None:
    assert route_template(f"/v2/deployments/{DEP}") == "/v2/deployments/{deployment_id}"
    assert (
        route_template(f"/v2/deployments/{DEP}/revisions/{REV}/redeploy?x=1")
        == "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy"
    )
    assert route_template("/v2/deployments") == "/v2/deployments"


def test_forwards_and_counts_by_route(proxy: FaultProxy) -> None:
    with httpx.Client(base_url=proxy.url) as http:
        answer = http.post("/v2/deployments?limit=3", json={"name": "a"})
        assert answer.status_code == 201
        assert answer.json() == {"path": "/v2/deployments?limit=3", "body": '{"name":"a"}'}
        assert http.get(f"/v2/deployments/{DEP}").status_code == 200
    stats = proxy.stats()
    assert stats["total"] == 2
    assert stats["requests"] == {
        "GET /v2/deployments/{deployment_id}": {"200": 1},
        "POST /v2/deployments": {"201": 1},
    }
    assert stats["arrived"]["POST /v2/deployments"] == 1


def test_injected_errors_are_never_performed(proxy: FaultProxy) -> None:
    proxy.set_faults(error_rate=1.0)
    with httpx.Client(base_url=proxy.url) as http:
        codes = {http.post("/v2/deployments", json={}).status_code for _ in range(20)}
    assert codes <= {500, 502, 503, 429}
    assert Upstream.performed == []
    proxy.set_faults(error_rate=0)
    with httpx.Client(base_url=proxy.url) as http:
        assert http.get("/v2/listeners").status_code == 200


def test_a_held_answer_is_performed_and_counted_on_arrival(proxy: FaultProxy) -> None:
    proxy.hold("POST", r"^/v2/deployments$", 30)
    client = httpx.Client(base_url=proxy.url, timeout=0.5)
    with pytest.raises(httpx.ReadTimeout):  # the client gives up; the request went through
        client.post("/v2/deployments", json={"name": "held"})
    client.close()
    assert proxy.stats()["arrived"] == {"POST /v2/deployments": 1}
    assert Upstream.performed == [("POST", "/v2/deployments")]
    proxy.clear_holds()
