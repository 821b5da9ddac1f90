"""The SSE keep-alive proxy of the Neuron and SGLang images, over real loopback sockets.

A fake engine (asyncio, HTTP/1.1 like uvicorn: chunked event streams, Content-Length JSON)
sits behind the real proxy; a raw-socket client plays the ALB, reusing one connection.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from ecs_inference.contracts import sse_proxy
from tests.images.engine_images import IMAGES, REPO, contracts_imported

NEURON_ENTRYPOINT = IMAGES / "neuron" / "entrypoint.py"

INTERVAL = 0.15
EVENTS = [
    b'data: {"choices":[{"text":"Hel"}]}\n\n',
    b'data: {"choices":[{"text":"lo"}]}\n\n',
    b"data: [DONE]\n\n",
]
SPLIT_EVENT = (b'data: {"choices":[{"text"', b':" split"}]}\n\n')


class FakeEngine:
    """Answers like vLLM's uvicorn server; records what it received."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append((head[0], headers, body))
        path = head[0].split(" ")[1]
        if path == "/health":
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        elif path == "/v1/completions":
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            await asyncio.sleep(4 * INTERVAL)  # queued + prefill: nothing to send
            pieces = [EVENTS[0], SPLIT_EVENT[0], SPLIT_EVENT[1], EVENTS[1], EVENTS[2]]
            for number, piece in enumerate(pieces):
                writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
                await writer.drain()
                # silence in the middle of an event must not get a comment injected
                await asyncio.sleep(3 * INTERVAL if number in (0, 1) else 0.01)
            writer.write(b"0\r\n\r\n")
        else:
            payload = json.dumps({"echo": json.loads(body)}).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%b" % (len(payload), payload)
            )
        await writer.drain()
        writer.close()


async def read_response(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], list[bytes]]:
    """Status line, headers and the list of body pieces (chunks, or the whole body)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)
    }
    if headers.get("transfer-encoding") == "chunked":
        pieces = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                await reader.readexactly(2)
                return head[0], headers, pieces
            pieces.append(await reader.readexactly(size))
            await reader.readexactly(2)
    return head[0], headers, [await reader.readexactly(int(headers["content-length"]))]


async def _exchange() -> dict[str, object]:
    engine = FakeEngine()
    upstream = await asyncio.start_server(engine.handle, "127.0.0.1", 0)
    upstream_port = upstream.sockets[0].getsockname()[1]
    proxy = sse_proxy.KeepAliveProxy("127.0.0.1", upstream_port, INTERVAL)
    server = await proxy.serve("127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    results: dict[str, object] = {"engine": engine}
    try:
        body = json.dumps({"model": "m", "prompt": "Hi", "stream": True}).encode()
        writer.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: alb\r\nAuthorization: Bearer t\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)
        )
        results["sse"] = await read_response(reader)
        # same client connection, like the ALB reusing a target connection
        body = json.dumps({"model": "m", "messages": []}).encode()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: alb\r\nTransfer-Encoding: chunked"
            b"\r\n\r\n%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
        )
        results["json"] = await read_response(reader)
        writer.write(b"GET /health HTTP/1.1\r\nHost: alb\r\nConnection: close\r\n\r\n")
        results["health"] = await read_response(reader)
        results["closed"] = await reader.read() == b""
        upstream.close()
        await upstream.wait_closed()
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", port)
        writer2.write(b"GET /health HTTP/1.1\r\nHost: alb\r\n\r\n")
        results["down"] = await read_response(reader2)
        writer2.close()
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
    return results


@pytest.fixture(scope="module")
def exchange() -> dict[str, object]:
    return asyncio.run(asyncio.wait_for(_exchange(), timeout=20))


def test_idle_event_stream_gets_keepalive_comments_between_events(exchange):
    status, headers, pieces = exchange["sse"]
    assert status == "HTTP/1.1 200 OK"
    assert headers["content-type"].startswith("text/event-stream")
    comments = [i for i, p in enumerate(pieces) if p == sse_proxy.KEEPALIVE_COMMENT]
    assert len(comments) >= 3  # the silent queue/prefill phase
    assert comments[0] == 0  # sent before the first token
    data = b"".join(p for p in pieces if p != sse_proxy.KEEPALIVE_COMMENT)
    assert data == EVENTS[0] + SPLIT_EVENT[0] + SPLIT_EVENT[1] + EVENTS[1] + EVENTS[2]
    # the comment after the first event is at a boundary, none landed inside the split event
    text = b"".join(pieces)
    assert SPLIT_EVENT[0] + SPLIT_EVENT[1] in text
    assert EVENTS[0] + sse_proxy.KEEPALIVE_COMMENT in text


def test_request_reaches_the_engine_unchanged_apart_from_hop_by_hop(exchange):
    engine = exchange["engine"]
    line, headers, body = engine.requests[0]
    assert line == "POST /v1/completions HTTP/1.1"
    assert headers["authorization"] == "Bearer t"
    assert headers["connection"] == "close"
    assert json.loads(body) == {"model": "m", "prompt": "Hi", "stream": True}
    line, headers, body = engine.requests[1]
    assert "transfer-encoding" not in headers  # de-chunked and sent with a length
    assert json.loads(body) == {"model": "m", "messages": []}


def test_plain_responses_pass_through_and_connection_is_reused(exchange):
    status, headers, pieces = exchange["json"]
    assert status == "HTTP/1.1 200 OK"
    assert headers["connection"] == "keep-alive"
    assert json.loads(pieces[0]) == {"echo": {"model": "m", "messages": []}}
    status, headers, pieces = exchange["health"]
    assert status == "HTTP/1.1 200 OK" and pieces == [b""]
    assert headers["connection"] == "close" and exchange["closed"]


def test_engine_not_listening_is_a_502(exchange):
    status, _, pieces = exchange["down"]
    assert status == "HTTP/1.1 502 Bad Gateway"
    assert b"engine not reachable" in pieces[0]


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        sse_proxy.KeepAliveProxy("127.0.0.1", 1, 0)


@pytest.mark.parametrize(
    "name",
    [
        "images/neuron/entrypoint.py",
        *(f"contracts/{m}.py" for m in sorted(contracts_imported(NEURON_ENTRYPOINT))),
    ],
)
def test_neuron_image_code_parses_as_python_3_10(name):
    # The Neuron DLC runs Python 3.10 (tag ...-py310-...); the test suite runs 3.11.
    import ast

    source = (REPO / name).read_text()
    ast.parse(source, feature_version=(3, 10))
    assert "TaskGroup" not in source and "asyncio.timeout(" not in source  # 3.11-only APIs
