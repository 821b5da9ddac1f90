"""The rollout smoke hook against a local engine stand-in on loopback.

The stand-in speaks what the engines speak through the ALB: OpenAI chat completions streamed as
server-sent events (with `: keep-alive` comments, as vLLM sends them), the Cohere/Jina v1 rerank
shape, and a Cognito-like token endpoint for the client-credentials grant. Each revision kind
the hook must refuse (broken, garbled, slow, hanging, keep-alives only, an error status, a wrong
ranking) is one behaviour of the stand-in; the good one must pass.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ecs_inference.rollouts import smoke

CLIENT_ID, CLIENT_SECRET, TOKEN = "hook-client", "s3cret", "tok-123"
RELEASE = threading.Event()


class StandIn(BaseHTTPRequestHandler):
    """One engine revision; its behaviour is the first path segment (`/<behaviour>/v1/...`)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *_args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/oauth2/token":
            return self._token()
        behaviour = self.path.split("/")[1]
        if self.headers.get(smoke.TEST_HEADER) != smoke.TEST_HEADER_VALUE:
            return self._reply(404, b"production rule: no test header")
        if behaviour.startswith("auth") and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._reply(401, b"jwt-validation refused")
        if behaviour == "hang":
            RELEASE.wait(30)
            return None
        if behaviour == "error":
            return self._reply(503, b"model not loaded")
        if self.path.endswith("/rerank"):
            return self._rerank(json.loads(body), reverse=behaviour == "misranked")
        return self._stream(behaviour)

    def _token(self) -> None:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if self.headers.get("Authorization") != f"Basic {expected}":
            return self._reply(400, b'{"error":"invalid_client"}')
        return self._reply(200, json.dumps({"access_token": TOKEN}).encode())

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _rerank(self, request: dict, reverse: bool) -> None:
        # Relevance: documents mentioning more query words first (a fixed, known order).
        words = set(request["query"].lower().split())
        scores = [len(words & set(d.lower().split())) for d in request["documents"]]
        scores = [-s for s in scores] if reverse else scores
        results = [{"index": i, "relevance_score": float(s)} for i, s in enumerate(scores)]
        self._reply(200, json.dumps({"results": results}).encode())

    def _stream(self, behaviour: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in _events(behaviour):
            data = line.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _events(behaviour: str) -> Iterator[str]:
    words = {"good": ["ready", "!"], "auth": ["ready"], "garbled": ["zx", "#q"], "empty": [""]}
    if behaviour == "slow":
        RELEASE.wait(2.0)
        words["slow"] = ["ready"]
    if behaviour == "keepalive":
        for _ in range(40):
            RELEASE.wait(0.05)
            yield ": keep-alive\n\n"
        return
    yield ": keep-alive\n\n"
    for word in words.get(behaviour, words["good"]):
        chunk = {"choices": [{"index": 0, "delta": {"content": word}}]}
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    RELEASE.set()
    server.shutdown()
    server.server_close()


def _chat(engine: str, behaviour: str, **overrides: object) -> smoke.SmokeSettings:
    details = {
        "url": f"{engine}/{behaviour}/v1/chat/completions",
        "kind": "chat",
        "model": "llama",
        "expect": "(?i)ready",
        "firstTokenSeconds": 20,
        "deadlineSeconds": 30,
        **overrides,
    }
    return smoke.SmokeSettings.from_details(details)


def test_a_good_revision_passes(engine: str) -> None:
    status, reason = smoke.run(_chat(engine, "good"))
    assert (status, reason.split(",")[0]) == (smoke.SUCCEEDED, "answer 'ready!'")


@pytest.mark.parametrize(
    ("behaviour", "overrides", "reason"),
    [
        ("garbled", {}, "does not match '(?i)ready'"),
        ("empty", {}, "ended without any answer text"),
        ("error", {}, "answered HTTP 503: model not loaded"),
        ("slow", {"firstTokenSeconds": 0.5}, "no first token after"),
        ("hang", {"firstTokenSeconds": 0.5, "deadlineSeconds": 1}, "no response from"),
        ("keepalive", {"firstTokenSeconds": 0.5}, "no first token after"),
    ],
)
def test_a_bad_revision_fails(engine: str, behaviour: str, overrides: dict, reason: str) -> None:
    status, why = smoke.run(_chat(engine, behaviour, **overrides))
    assert status == smoke.FAILED
    assert reason in why


def test_the_hook_authenticates_like_an_api_caller(engine: str) -> None:
    secrets = {"arn:aws:secretsmanager:us-east-1:123456789012:secret:hook-AbCdEf": CLIENT_SECRET}
    settings = _chat(
        engine,
        "auth",
        tokenUrl=f"{engine}/oauth2/token",
        clientId=CLIENT_ID,
        clientSecretArn=next(iter(secrets)),
        scope="inference/invoke",
    )
    assert smoke.run(settings, secret=secrets.__getitem__)[0] == smoke.SUCCEEDED
    # Without the token the test rule refuses, as production's jwt-validation does.
    unauthenticated = _chat(engine, "auth")
    status, why = smoke.run(unauthenticated)
    assert (status, "HTTP 401" in why) == (smoke.FAILED, True)
    wrong = {next(iter(secrets)): "wrong"}
    assert smoke.run(settings, secret=wrong.__getitem__)[0] == smoke.FAILED


def _rerank(engine: str, behaviour: str) -> smoke.SmokeSettings:
    return smoke.SmokeSettings.from_details(
        {
            "url": f"{engine}/{behaviour}/v1/rerank",
            "kind": "rerank",
            "model": "reranker",
            "prompt": "how to rotate a secret",
            "documents": [
                "rotate a secret on a schedule: how to",
                "a secret rotation",
                "cooking pasta",
            ],
        }
    )


def test_a_reranker_must_keep_the_known_order(engine: str) -> None:
    assert smoke.run(_rerank(engine, "good"))[0] == smoke.SUCCEEDED
    status, why = smoke.run(_rerank(engine, "misranked"))
    assert status == smoke.FAILED
    assert "expected [0, 1, 2]" in why


def test_the_handler_answers_ecs_and_fails_closed_on_bad_details(engine: str) -> None:
    event = {
        "serviceArn": "arn:aws:ecs:us-east-1:123456789012:service/c/s",
        "hookDetails": {"url": f"{engine}/good/v1/chat/completions", "kind": "chat", "model": "m"},
    }
    assert smoke.handler(event) == {"hookStatus": smoke.SUCCEEDED}
    for details in ({"url": "x", "kind": "embed", "model": "m"}, {"url": "x", "colour": "red"}):
        assert smoke.handler({"hookDetails": details}) == {"hookStatus": smoke.FAILED}
