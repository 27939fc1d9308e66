"""The guard in front of every route, attacked as a hostile page or client would: an empty token, a rebinding
Host with a token, framing, cross-site posts, clients that trickle their headers or body; refusals in the
OpenAI error shape."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from typer.testing import CliRunner

from atoll.cli import app as cli_app
from atoll.evals import RunStore
from atoll.service import create_service_app
from atoll.worlds.serve import Guard, check_bind, guarded_protocol

TOKEN = "s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as opened:
        yield opened


@pytest.mark.parametrize("token", ["", "   ", "\t"])
def test_an_empty_token_is_refused_before_anything_is_served(store: RunStore, token: str) -> None:
    with pytest.raises(ValueError, match="the token is empty"):
        create_service_app(worlds=["helpdesk"], store=store, token=token)
    with pytest.raises(ValueError, match="the token is empty"):
        check_bind("127.0.0.1", token)
    result = CliRunner().invoke(cli_app, ["serve", "--token", token])
    assert result.exit_code == 2 and "the token is empty" in result.stderr
    assert "serving" not in result.stderr


def test_a_rebinding_host_is_refused_on_a_loopback_bind_even_with_the_token(store: RunStore, serve) -> None:
    with serve(create_service_app(worlds=["helpdesk"], store=store, token=TOKEN)) as url:
        for path in ("/health", "/v1/records", "/jobs"):
            rebound = httpx.get(f"{url}{path}", headers={**BEARER, "Host": "evil.example"})
            assert rebound.status_code == 403, path
            assert "not loopback" in rebound.json()["error"]["message"]
        assert httpx.get(f"{url}/v1/records", headers=BEARER).status_code == 200


def test_refusals_come_in_the_openai_error_shape(store: RunStore, serve) -> None:
    with serve(create_service_app(worlds=["helpdesk"], store=store, token=TOKEN)) as url:
        missing = httpx.get(f"{url}/v1/records")
        too_large = httpx.post(f"{url}/feedback", headers=BEARER, content=b"x" * (2 << 20))
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"] | {"message": ""} == {
        "message": "",
        "type": "authentication_error",
        "param": None,
        "code": "invalid_api_key",
    }
    assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "request_too_large"


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/no/such/route", 404, "not_found"),
        ("DELETE", "/health", 405, "method_not_allowed"),
        ("GET", "/api/runs/x/episodes/t1/not-a-seed", 400, "invalid_request"),
        ("PUT", "/rest/payments/k1", 400, "invalid_request"),
    ],
)
def test_fastapis_own_refusals_come_in_the_openai_error_shape(
    store: RunStore, serve, method: str, path: str, status: int, code: str
) -> None:
    with serve(create_service_app(worlds=["helpdesk", "payments"], store=store)) as url:
        reply = httpx.request(method, f"{url}{path}", json=[1] if method == "PUT" else None)
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert "detail" not in body and body["error"]["code"] == code and body["error"]["message"]
    assert body["error"]["type"] == "invalid_request_error"


def test_no_page_can_be_framed_by_another_site(store: RunStore, serve) -> None:
    with serve(create_service_app(worlds=["helpdesk"], store=store)) as url:
        for path in ("/console/", "/", "/health"):
            headers = httpx.get(f"{url}{path}").headers
            assert headers["x-frame-options"] == "DENY", path
            assert "frame-ancestors 'none'" in headers["content-security-policy"], path


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"content-type": "text/plain"}, 415),
        ({"content-type": "application/x-www-form-urlencoded"}, 415),
        ({"content-type": "multipart/form-data; boundary=x"}, 415),
        ({"content-type": "application/json", "sec-fetch-site": "cross-site"}, 403),
        ({"content-type": "application/json", "sec-fetch-site": "same-site"}, 403),
    ],
)
def test_a_state_changing_post_another_site_could_send_without_an_origin_is_refused(
    store: RunStore, serve, headers: dict[str, str], status: int
) -> None:
    with serve(create_service_app(worlds=["helpdesk"], store=store)) as url:
        body = b'{"to": 1, "expected_head": 1}'
        refused = httpx.post(f"{url}/api/releases/desk/rollback", content=body, headers=headers)
        allowed = httpx.post(
            f"{url}/api/releases/desk/rollback", content=body, headers={"content-type": "application/json"}
        )
    assert refused.status_code == status, refused.text
    assert allowed.status_code == 404, "a same-origin JSON post reaches the route"


# -- slow clients -------------------------------------------------------------------------------------------


def trickling(url: str, count: int) -> list[socket.socket]:
    """`count` connections that each sent a partial request header, as a slowloris client does."""
    port = int(url.rsplit(":", 1)[1])
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        sockets.append(sock)
    return sockets


def closed(sock: socket.socket, within: float) -> bool:
    """Whether the server closes `sock` within `within` seconds while it keeps trickling bytes."""
    deadline = time.monotonic() + within
    sock.settimeout(0.05)
    while time.monotonic() < deadline:
        try:
            sock.sendall(b"a")
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def test_clients_trickling_their_headers_cannot_take_every_connection(store: RunStore, serve) -> None:
    app = create_service_app(worlds=["helpdesk"], store=store)
    protocol = guarded_protocol(max_waiting=8, header_timeout_s=30)
    with serve(app, http=protocol, limit_concurrency=24) as url:
        slow = trickling(url, 40)
        try:
            time.sleep(0.2)  # the server has taken them all
            answers = [httpx.get(f"{url}/health").status_code for _ in range(5)]
        finally:
            for sock in slow:
                sock.close()
    assert answers == [200] * 5


def test_a_connection_that_trickles_its_headers_is_closed_at_the_deadline(store: RunStore, serve) -> None:
    app = create_service_app(worlds=["helpdesk"], store=store)
    with serve(app, http=guarded_protocol(max_waiting=8, header_timeout_s=0.5)) as url:
        (slow,) = trickling(url, 1)
        with slow:
            assert closed(slow, within=5)
        with httpx.Client() as kept_alive:  # a kept-alive connection gets a fresh deadline per request
            assert [kept_alive.get(f"{url}/health").status_code for _ in range(3)] == [200] * 3


def test_a_body_that_trickles_is_cut_with_a_408(serve) -> None:
    inner = FastAPI()

    @inner.post("/echo")
    async def echo(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    with serve(Guard(inner, token=None, body_timeout_s=0.3)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
            sock.settimeout(5)
            reply = ""
            while "request_timeout" not in reply:  # the head and the body may come in two segments
                chunk = sock.recv(4096).decode()
                if not chunk:
                    break
                reply += chunk
    assert re.match(r"HTTP/1.1 408", reply), reply
    assert "request_timeout" in reply


def test_the_worlds_server_runs_under_the_same_guarded_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from atoll.worlds.serve import run_mcp, run_server

    given: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: given.append(options))
    run_server(worlds=["helpdesk"], max_sessions=20)
    run_mcp("helpdesk", "small_shop", http=True, max_sessions=20)
    assert [options["http"].__name__ for options in given] == ["GuardedProtocol"] * 2
    assert [options["limit_concurrency"] for options in given] == [84] * 2


def trickling_bodies(url: str, count: int) -> list[socket.socket]:
    """`count` connections whose headers came whole and whose body trickles, no token needed."""
    port = int(url.rsplit(":", 1)[1])
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /feedback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        sockets.append(sock)
        time.sleep(0.01)  # one at a time, each parsed before the next: not a burst the guard thins out
    return sockets


def test_clients_trickling_their_bodies_cannot_take_every_connection(store: RunStore, serve) -> None:
    app = create_service_app(worlds=["helpdesk"], store=store)
    protocol = guarded_protocol(max_waiting=8, header_timeout_s=30)
    with serve(app, http=protocol, limit_concurrency=24) as url:
        slow = trickling_bodies(url, 40)
        try:
            time.sleep(0.3)  # the server has taken them all
            answers = [httpx.get(f"{url}/health").status_code for _ in range(10)]
        finally:
            for sock in slow:
                sock.close()
    assert answers == [200] * 10


def test_a_burst_of_silent_connections_does_not_drop_a_client_halfway_through_its_headers(
    store: RunStore, serve
) -> None:
    app = create_service_app(worlds=["helpdesk"], store=store)
    with serve(app, http=guarded_protocol(max_waiting=8, header_timeout_s=30)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as real:
            real.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n")
            time.sleep(0.3)
            burst = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
            time.sleep(0.3)
            try:
                real.sendall(b"\r\n")
                real.settimeout(5)
                reply = real.recv(4096)
            finally:
                for sock in burst:
                    sock.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply


def test_a_get_may_carry_the_token_in_its_query_as_the_docs_allow(store: RunStore, serve) -> None:
    with serve(create_service_app(worlds=["helpdesk"], store=store, token=TOKEN)) as url:
        for path in ("/v1/records", "/jobs", "/api/runs", "/api/optimizations"):
            answer = httpx.get(f"{url}{path}", params={"token": TOKEN, "limit": 5})
            assert answer.status_code == 200, (path, answer.text)
            assert httpx.get(f"{url}{path}", params={"token": "wrong"}).status_code == 401


def test_serving_on_a_port_in_use_is_one_line_before_anything_says_serving(store: RunStore) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for args in (["serve", "--port", port], ["mcp", "helpdesk", "--http", "--port", port]):
            result = CliRunner().invoke(cli_app, args)
            assert result.exit_code == 2, result.output
            assert f"cannot serve on 127.0.0.1:{port}" in result.stderr and "serving" not in result.stderr
            assert "Traceback" not in result.output


def test_pipelined_requests_are_answered_not_cut_at_the_header_deadline(serve) -> None:
    inner = FastAPI()

    @inner.get("/fast")
    async def fast() -> dict[str, str]:
        return {"took": "no time"}

    @inner.get("/slow")
    async def slow() -> dict[str, str]:
        await asyncio.sleep(1.5)  # past the header deadline, while the request is being answered
        return {"took": "a while"}

    with serve(inner, http=guarded_protocol(max_waiting=8, header_timeout_s=0.5)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                b"".join(f"GET /{p} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() for p in ("fast", "slow"))
            )
            sock.settimeout(5)
            received = b""
            deadline = time.monotonic() + 5
            while b"a while" not in received and time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
    assert b"no time" in received and b"a while" in received, received
