"""Every HTTP route of `optimize serve --harness … --world …`, its /mcp JSON-RPC and its /ws protocol, fed what a
hostile or careless client sends (issue 35): JSON nested thousands deep, bodies past the size bound, bytes
that are not UTF-8, numbers past every range, odd path segments. Whatever comes in, the answer is never a 500,
never a traceback, and never a hang (every request has a deadline)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route
from websockets.sync.client import connect

from atoll.evals import RunStore
from atoll.harnesses.models import ScriptedModel
from atoll.service import create_service_app

FILES = {
    "harness.yaml": "name: desk\nworld: helpdesk\nmodel: scripted\nentry: front\n"
    "agents:\n  front:\n    prompt: prompts/front.md.j2\n",
    "tools.yaml": "front: [get_order]\n",
    "prompts/front.md.j2": "You are the front desk.\n",
}
DEADLINE_S = 20.0  # a request that has no answer by then is a hang
PER_ROUTE = 25  # examples for each route and method
FUZZ = settings(
    max_examples=150,
    deadline=None,  # a live server on a shared machine: the request's own timeout is the bound
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

# -- what a hostile client sends ----------------------------------------------------------------------------

OUT_OF_RANGE = [
    "1e400",
    "-1e400",
    "1e-400",
    "NaN",
    "Infinity",
    str(2**63),
    str(-(2**63) - 1),
    str(10**40),
    "-0",
]


def nested(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return '{"metadata": ' + "[" * depth + "]" * depth + "}"


short_texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "..", "../../etc/passwd", ".x", "a/b", "%FF", "\x00", "ORD-1001", "latest", "-1"]),
    st.sampled_from(OUT_OF_RANGE),
)
texts = short_texts | st.integers(200, 300_000).map(lambda n: "x" * n)
# A path parameter's values: the names that reach past the routing (a served world, harness, operation) as
# often as odd ones, so the fuzzed bodies reach the code behind the route.
KNOWN = {
    "world": ["payments", "helpdesk"],
    "key": ["k1", "k2"],
    "path": ["v1/customers", "v1/payment_intents", "v1/refunds", "v1/prices", "v1/balance"],
    "harness": ["desk"],
    "name": ["desk"],
    "ref": ["latest"],
}


def parameter(name: str) -> st.SearchStrategy[str]:
    if name not in KNOWN:
        return short_texts
    known = st.sampled_from(KNOWN[name])
    return st.one_of(known, known, known, short_texts)  # mostly past the routing


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        texts,
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
KEYS = [
    "model", "messages", "metadata", "record_ids", "passed", "score", "comment", "source", "kind", "options",
    "to", "expected_head", "note", "fixture", "seed", "clock", "world", "amount", "currency", "limit",
    "max_cost_usd", "max_minutes", "stream", "temperature", "n", "atoll_context", "session_id", "type", "data",
]  # fmt: skip
objects = st.dictionaries(st.sampled_from(KEYS) | texts, json_values, max_size=6)


def raw_json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, str]:
    """A body and its content type: nested past every parser, over the size bound, not UTF-8, numbers out of
    range written as JSON text, form-encoded brackets, or plain odd JSON."""
    kind = draw(
        st.sampled_from(["nested", "nested", "huge", "binary", "number", "form", "json", "json", "empty"])
    )
    if kind == "nested":
        depth = draw(st.sampled_from([100, 201, 1000, 5000, 100_000]))
        body = nested(depth, draw(st.sampled_from(["array", "object", "inside"]))).encode()
    elif kind == "huge":
        body = b'{"comment": "' + b"x" * draw(st.sampled_from([300_000, 1_100_000, 2_500_000])) + b'"}'
    elif kind == "binary":
        body = draw(st.binary(max_size=200)) + b"\xff\xfe\xc3\x28"
    elif kind == "number":
        key, number = draw(st.sampled_from(KEYS)), draw(st.sampled_from(OUT_OF_RANGE))
        body = f'{{"{key}": {number}, "options": {{"max_cost_usd": {number}}}}}'.encode()
    elif kind == "form":
        name = (
            "metadata"
            + "[a]" * draw(st.sampled_from([1, 17, 600]))
            + "&amount="
            + draw(st.sampled_from(OUT_OF_RANGE))
        )
        return f"{name}=x".encode(), "application/x-www-form-urlencoded"
    elif kind == "empty":
        body = b""
    else:
        body = raw_json(draw(objects))
    return body, draw(st.sampled_from(["application/json"] * 4 + ["text/plain", ""]))


# -- the server ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, serve):
    folder = tmp_path_factory.mktemp("fuzz")
    for name, text in FILES.items():
        (folder / "desk" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "desk" / name).write_text(text)
    store = RunStore(folder / "runs.sqlite")
    app = create_service_app(
        [folder / "desk"],
        worlds=["helpdesk", "payments"],
        store=store,
        model=ScriptedModel(fn=lambda request: "ok"),
        policy=None,
    )
    routes = list(http_routes(app.routes))
    with serve(app) as url, httpx.Client(base_url=url, timeout=DEADLINE_S) as client:
        yield url, client, routes
    store.close()


def http_routes(routes: list[Any], prefix: str = "") -> Any:
    """Each HTTP route's path and methods, those of included routers too."""
    for route in routes:
        if isinstance(route, Route) and route.methods:
            yield prefix + route.path, sorted(route.methods - {"HEAD"})
        elif hasattr(route, "original_router"):  # FastAPI's included router
            yield from http_routes(route.original_router.routes, prefix + route.include_context.prefix)


def path_for(template: str, values: list[str]) -> str:
    """The route's path with each `{param}` replaced by a drawn value, URL-quoted (a `:path` one keeps `/`)."""
    parts = iter(values)
    return re.sub(
        r"\{(\w+)(:path)?\}",
        lambda m: quote(next(parts), safe="/" if m.group(2) else "") or "x",
        template,
    )


def never_broken(answer: httpx.Response, what: str) -> None:
    assert answer.status_code < 500, f"{what}: {answer.status_code} {answer.text[:300]}"
    assert "Traceback" not in answer.text, what


def test_every_route_is_fuzzed(served) -> None:
    _, _, routes = served
    paths = {path for path, _ in routes}
    for expected in (
        "/v1/chat/completions",
        "/feedback",
        "/jobs",
        "/api/releases/{harness}/rollback",
        "/mcp",
    ):
        assert expected in paths
    assert len(routes) >= 30


def test_no_http_route_answers_a_500_a_traceback_or_hangs(served) -> None:
    """Each route and method in turn, PER_ROUTE examples each: a route drawn among forty would leave the deep
    code behind one (a REST operation on a served world) almost never reached."""
    _, client, routes = served
    for template, methods in routes:
        for method in methods:
            fuzz_route(client, template, method)


def fuzz_route(client: httpx.Client, template: str, method: str) -> None:
    names = re.findall(r"\{(\w+)", template)
    keys = st.sampled_from(["limit", "after", "harness", "token", "kind", "amount", "x"])

    @settings(FUZZ, max_examples=PER_ROUTE)
    @given(
        values=st.tuples(*(parameter(name) for name in names)),
        query=st.dictionaries(keys, short_texts, max_size=3),
        body=bodies(),
    )
    def fuzz(values: tuple[str, ...], query: dict[str, str], body: tuple[bytes, str]) -> None:
        path = path_for(template, list(values))
        headers = {"authorization": "Bearer sk_test_x"}
        if method in ("GET", "DELETE"):
            answer = client.request(method, path, params=query, headers=headers)
        else:
            content, kind = body
            if template == "/jobs":  # a job that parses would run the optimizer: only invalid ones here
                content = content.replace(b'"kind"', b'"kind_"')
            answer = client.request(method, path, content=content, headers={**headers, "content-type": kind})
        never_broken(answer, f"{method} {path}")

    fuzz()


@FUZZ
@given(body=bodies(), model=st.sampled_from(["desk", "desk/front", "nope", ""]), content=json_values)
def test_the_chat_route_never_answers_a_500(
    served, body: tuple[bytes, str], model: str, content: Any
) -> None:
    _, client, _ = served
    chat = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "metadata": {"atoll_context": body[0].decode("utf-8", "replace")[:5000]},
    }
    for payload in (body[0], raw_json(chat)):
        answer = client.post(
            "/v1/chat/completions", content=payload, headers={"content-type": "application/json"}
        )
        never_broken(answer, "chat")


@FUZZ
@given(
    method=st.sampled_from(
        ["tools/list", "tools/call", "openenv/session/create", "openenv/session/close", "x"]
    ),
    params=objects,
    body=bodies(),
)
def test_mcp_never_fails_inside(served, method: str, params: dict[str, Any], body: tuple[bytes, str]) -> None:
    _, client, _ = served
    if method == "tools/call":
        params = {**params, "name": params.get("name", "get_order")}
    for payload in (raw_json({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}), body[0]):
        answer = client.post("/mcp", content=payload, headers={"content-type": "application/json"})
        never_broken(answer, "mcp")
        if answer.status_code == 200 and "error" in answer.json():
            error = answer.json()["error"]
            assert not re.match(r"\w+(Error|Exception): ", error["message"]), error


@st.composite
def frames(draw: st.DrawFn) -> str | bytes:
    kind = draw(st.sampled_from(["message", "message", "body", "body", "binary"]))
    if kind == "binary":
        return draw(st.binary(max_size=100)) + b"\xff"
    if kind == "body":
        body, _ = draw(bodies())
        return body.decode("utf-8", "replace")[:1_200_000]
    message = {
        "type": draw(st.sampled_from(["reset", "step", "state", "rows", "close_", "x"])),
        "data": draw(
            st.one_of(
                objects,
                st.fixed_dictionaries(
                    {
                        "type": st.just("call_tool"),
                        "tool_name": st.sampled_from(["get_order", "x"]),
                        "arguments": objects,
                    }
                ),
                st.fixed_dictionaries(
                    {
                        "world": st.sampled_from(["helpdesk", "payments", ".x"]),
                        "clock": texts,
                        "seed": json_values,
                    }
                ),
            )
        ),
    }
    return raw_json(message).decode("utf-8", "surrogatepass")


@settings(FUZZ, max_examples=60)
@given(sent=st.lists(frames(), min_size=1, max_size=5))
def test_the_websocket_answers_every_frame_and_never_fails_inside(served, sent: list[str | bytes]) -> None:
    url, _, _ = served
    with connect(url.replace("http", "ws") + "/ws", max_size=None, open_timeout=DEADLINE_S) as socket:
        for frame in sent:
            try:
                socket.send(frame)
                reply = json.loads(socket.recv(timeout=DEADLINE_S))
            except Exception as error:  # a frame far past the bound closes the socket: that is an answer
                assert "1009" in str(error) or "closed" in str(error).lower(), error
                return
            assert reply["type"] in ("observation", "state", "rows", "error"), reply
            if reply["type"] == "error":
                assert reply["data"]["code"] != "EXECUTION_ERROR", reply


@pytest.fixture(scope="module")
def mcp_served(serve, mcp_session):
    """`optimize mcp helpdesk --http`'s app, with one initialized MCP session."""
    from atoll.worlds.serve import create_mcp_http_app

    with (
        serve(create_mcp_http_app("helpdesk", "small_shop")) as url,
        httpx.Client(base_url=url, timeout=DEADLINE_S) as client,
    ):
        yield client, mcp_session(client.post, "/mcp")


@settings(FUZZ, max_examples=80)
@given(
    name=st.sampled_from(["get_order", "search_orders", "x"]) | short_texts, arguments=objects, body=bodies()
)
def test_the_mcp_server_never_fails_inside(
    mcp_served, name: str, arguments: dict[str, Any], body: tuple[bytes, str]
) -> None:
    client, session = mcp_served
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    for payload in (raw_json(call), body[0]):
        answer = client.post("/mcp", content=payload, headers=session)
        never_broken(answer, "mcp over http")
