"""The smoke test a model service's new revision must pass before it takes production traffic.

ECS runs it as a Lambda lifecycle hook of a blue/green, canary or linear deployment, at
`POST_TEST_TRAFFIC_SHIFT`: the new (green) revision then holds all of the test traffic and none of
the production traffic. The hook sends real requests through the test listener rule, which
authenticates like production, and answers ECS with `hookStatus`:

- `SUCCEEDED`: the deployment moves on to the production traffic shift;
- `FAILED`: ECS rolls the deployment back to the last revision that succeeded.

A model passes when its streamed answer arrives, is not empty, matches the optional expected
pattern and gives its first token within the bound (derived from the service's own latency
target); a re-ranker passes when it orders a fixed query's documents as expected. A revision
that never answers fails at its deadline: the hook never lets ECS wait on a hung socket.

This module is the whole Lambda package (`handler` is the entry point), so it imports only the
standard library, plus botocore, which the Lambda Python runtime ships, for the one secret it reads.
The settings arrive in the hook's `hookDetails`, written by the rollout component.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
TEST_HEADER = "x-ecs-inference-revision"
"""Header the test listener rule matches (value `test`); production rules never see it."""
TEST_HEADER_VALUE = "test"


class SmokeTestError(Exception):
    """The revision answered wrongly or too late; the message says what and by how much."""


@dataclass(frozen=True)
class SmokeSettings:
    """What one service's smoke test sends and expects (the hook's `hookDetails`)."""

    url: str
    """Full https URL of the service's API path through the test listener rule."""
    kind: str
    """`chat` (OpenAI chat completions, streamed) or `rerank` (Cohere/Jina v1 shape)."""
    model: str
    """Served model name sent in the request body."""
    prompt: str = "Reply with the single word: ready"
    """Chat prompt (chat) or query (rerank)."""
    expect: str | None = None
    """Regular expression the whole answer must contain (search); none: any non-empty answer."""
    documents: tuple[str, ...] = ()
    """Re-ranker documents, in the order the service must rank them (most relevant first)."""
    first_token_seconds: float = 10.0
    """Longest wait for the first streamed token (s); from the service's TTFT target."""
    deadline_seconds: float = 60.0
    """Longest the whole test may take (s); below the Lambda timeout."""
    max_tokens: int = 16
    """Tokens asked for: enough to see an answer, few enough to be quick."""
    token_url: str | None = None
    """Cognito token endpoint for the client-credentials grant; none: send no token."""
    client_id: str | None = None
    """App client the hook authenticates as."""
    client_secret_arn: str | None = None
    """Secrets Manager secret holding that client's secret (the hook role may read only it)."""
    scope: str | None = None
    """OAuth scope to request (space separated)."""
    ca_pem: str | None = None
    """PEM of the certificate authority to trust (a self-signed dev certificate); none: system."""
    tls_name: str | None = None
    """Name the certificate must carry when the URL's host is the ALB's DNS name."""
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> SmokeSettings:
        """Settings from `hookDetails` (camelCase keys, as the component writes them)."""
        names = {
            "url": "url",
            "kind": "kind",
            "model": "model",
            "prompt": "prompt",
            "expect": "expect",
            "documents": "documents",
            "firstTokenSeconds": "first_token_seconds",
            "deadlineSeconds": "deadline_seconds",
            "maxTokens": "max_tokens",
            "tokenUrl": "token_url",
            "clientId": "client_id",
            "clientSecretArn": "client_secret_arn",
            "scope": "scope",
            "caPem": "ca_pem",
            "tlsName": "tls_name",
        }
        unknown = sorted(set(details) - set(names))
        if unknown:
            raise ValueError(f"hookDetails has unknown keys {unknown}")
        values = {names[k]: v for k, v in details.items() if v is not None}
        if "documents" in values:
            values["documents"] = tuple(values["documents"])
        settings = cls(**values)
        if settings.kind not in ("chat", "rerank"):
            raise ValueError(f"hookDetails.kind must be chat or rerank, not {settings.kind!r}")
        if settings.kind == "rerank" and len(settings.documents) < 2:
            raise ValueError("a rerank smoke test needs at least two documents to order")
        return settings


@dataclass
class Clock:
    """Monotonic time against one deadline; every socket wait is cut to what is left."""

    deadline_seconds: float
    now: Callable[[], float] = time.monotonic
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.now()

    def elapsed(self) -> float:
        return self.now() - self.started

    def left(self, what: str) -> float:
        """Seconds left before the deadline, or a failure naming what was still awaited."""
        left = self.deadline_seconds - self.elapsed()
        if left <= 0:
            raise SmokeTestError(f"no {what} within the {self.deadline_seconds:g} s deadline")
        return left


def _connection(url: str, settings: SmokeSettings, timeout: float) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "http":
        return http.client.HTTPConnection(parts.hostname or "", parts.port or 80, timeout=timeout)
    context = ssl.create_default_context(cadata=settings.ca_pem) if settings.ca_pem else None
    context = context or ssl.create_default_context()
    if settings.tls_name:
        return _NamedTlsConnection(
            parts.hostname or "", parts.port or 443, settings.tls_name, context, timeout
        )
    return http.client.HTTPSConnection(
        parts.hostname or "", parts.port or 443, context=context, timeout=timeout
    )


class _NamedTlsConnection(http.client.HTTPSConnection):
    """Connects to the ALB's DNS name but checks the certificate for the endpoint's own name."""

    def __init__(
        self, host: str, port: int, tls_name: str, context: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self._tls_name = tls_name
        self._tls_context = context

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._tls_context.wrap_socket(raw, server_hostname=self._tls_name)


def _request(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    settings: SmokeSettings,
    clock: Clock,
    wait: float,
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """POST `body`; the status line must come within `wait` (and the deadline)."""
    conn = _connection(url, settings, min(wait, clock.left("connection")))
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("POST", path or "/", body=body, headers=dict(headers))
        response = conn.getresponse()
    except TimeoutError as exc:
        raise SmokeTestError(f"no response from {url} within {clock.elapsed():.1f} s") from exc
    except OSError as exc:
        raise SmokeTestError(f"{url} refused the request: {exc}") from exc
    if response.status != 200:
        detail = response.read(300).decode("utf-8", "replace").strip()
        raise SmokeTestError(f"{url} answered HTTP {response.status}: {detail}")
    return conn, response


def _bearer_token(settings: SmokeSettings, clock: Clock, secret: Callable[[str], str]) -> str:
    """An access token from the client-credentials grant, as API callers get one."""
    if not (settings.token_url and settings.client_id and settings.client_secret_arn):
        raise SmokeTestError("tokenUrl, clientId and clientSecretArn go together")
    basic = f"{settings.client_id}:{secret(settings.client_secret_arn)}".encode()
    form = {"grant_type": "client_credentials"}
    if settings.scope:
        form["scope"] = settings.scope
    headers = {
        "Authorization": "Basic " + base64.b64encode(basic).decode(),
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body = urllib.parse.urlencode(form).encode()
    _, response = _request(settings.token_url, body, headers, settings, clock, clock.left("token"))
    token = json.loads(response.read()).get("access_token")
    if not token:
        raise SmokeTestError("the token endpoint returned no access_token")
    return token


@dataclass
class _Progress:
    """What the stream has given so far."""

    text: str = ""
    first: float | None = None
    """Seconds from the start to the first token; none before it."""


def _stream_lines(
    conn: http.client.HTTPConnection,
    response: http.client.HTTPResponse,
    settings: SmokeSettings,
    clock: Clock,
    progress: _Progress,
) -> Iterator[str]:
    """The response's lines, each read cut to what is left of its bound.

    Before the first token the bound is `first_token_seconds`, after it the deadline; keep-alive
    comments do not extend either, so a revision that only sends keep-alives still fails.
    """
    while True:
        if progress.first is not None:
            left = clock.left("end of the stream")
        else:
            left = settings.first_token_seconds - clock.elapsed()
            if left <= 0:
                raise SmokeTestError(_late(settings, clock, "first token"))
        if conn.sock is not None:
            conn.sock.settimeout(left)
        try:
            line = response.readline()
        except TimeoutError:
            awaited = "first token" if progress.first is None else "end of the stream"
            raise SmokeTestError(_late(settings, clock, awaited)) from None
        if not line:
            return
        yield line.decode("utf-8", "replace").rstrip("\r\n")


def _late(settings: SmokeSettings, clock: Clock, awaited: str) -> str:
    return (
        f"no {awaited} after {clock.elapsed():.1f} s (bound {settings.first_token_seconds:g} s "
        f"to the first token, {settings.deadline_seconds:g} s in all)"
    )


def _delta_text(payload: str) -> str:
    """Text of one chat-completion chunk (`choices[0].delta.content`), or ''."""
    try:
        choices = json.loads(payload).get("choices") or [{}]
    except (ValueError, AttributeError):
        raise SmokeTestError(f"a stream chunk is not JSON: {payload[:80]!r}") from None
    delta = choices[0].get("delta") or {}
    return delta.get("content") or choices[0].get("text") or ""


def check_chat(settings: SmokeSettings, headers: Mapping[str, str], clock: Clock) -> str:
    """Stream one chat completion; returns what passed, raises SmokeTestError otherwise."""
    body = json.dumps(
        {
            "model": settings.model,
            "messages": [{"role": "user", "content": settings.prompt}],
            "max_tokens": settings.max_tokens,
            "temperature": 0,
            "stream": True,
        }
    ).encode()
    first_wait = min(settings.first_token_seconds, clock.left("response"))
    conn, response = _request(settings.url, body, headers, settings, clock, first_wait)
    progress = _Progress()
    for line in _stream_lines(conn, response, settings, clock, progress):
        if not line.startswith("data:"):
            continue  # event names, ids and `:` keep-alive comments
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
        piece = _delta_text(payload)
        if piece and progress.first is None:
            progress.first = clock.elapsed()
        progress.text += piece
    conn.close()
    return _judge_answer(settings, progress.text, progress.first)


def _judge_answer(settings: SmokeSettings, text: str, first: float | None) -> str:
    if first is None or not text.strip():
        raise SmokeTestError("the stream ended without any answer text")
    if first > settings.first_token_seconds:
        raise SmokeTestError(
            f"first token after {first:.1f} s, over the {settings.first_token_seconds:g} s bound"
        )
    if settings.expect and not re.search(settings.expect, text):
        raise SmokeTestError(f"the answer {text[:120]!r} does not match {settings.expect!r}")
    return f"answer {text[:60]!r}, first token after {first:.2f} s"


def check_rerank(settings: SmokeSettings, headers: Mapping[str, str], clock: Clock) -> str:
    """Rerank the fixed documents (sent shuffled); the order must be the expected one."""
    order = list(range(len(settings.documents)))[::-1]
    sent = [settings.documents[i] for i in order]
    body = json.dumps(
        {"model": settings.model, "query": settings.prompt, "documents": sent}
    ).encode()
    conn, response = _request(settings.url, body, headers, settings, clock, clock.left("response"))
    try:
        results = json.loads(response.read())["results"]
        ranked = [order[r["index"]] for r in sorted(results, key=lambda r: -r["relevance_score"])]
    except TimeoutError:
        raise SmokeTestError(f"no rerank result within {clock.elapsed():.1f} s") from None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise SmokeTestError(f"the rerank answer is not of the v1 shape: {exc!r}") from None
    finally:
        conn.close()
    if ranked != sorted(ranked):
        raise SmokeTestError(f"documents ranked {ranked}, expected {sorted(ranked)}")
    return f"{len(ranked)} documents in the expected order"


def run(settings: SmokeSettings, secret: Callable[[str], str] | None = None) -> tuple[str, str]:
    """(hookStatus, reason) for one smoke test."""
    clock = Clock(settings.deadline_seconds)
    headers = {"Content-Type": "application/json", TEST_HEADER: TEST_HEADER_VALUE}
    headers.update(settings.extra_headers)
    try:
        if settings.token_url:
            token = _bearer_token(settings, clock, secret or _secrets_manager_value)
            headers["Authorization"] = f"Bearer {token}"
        check = check_chat if settings.kind == "chat" else check_rerank
        return SUCCEEDED, check(settings, headers, clock)
    except SmokeTestError as failure:
        return FAILED, str(failure)


def aws_calls(details: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The AWS calls one run makes for these `hookDetails`, as (action, resource, why): the
    runtime rehearsal checks the hook's role allows each (tools/rehearsal/deployments.py)."""
    arn = details.get("clientSecretArn")
    if not arn:
        return []
    return [("secretsmanager:GetSecretValue", str(arn), "read its client secret for a token")]


def _secrets_manager_value(arn: str) -> str:
    import botocore.session  # the Lambda runtime ships it; tests pass `secret` instead

    client = botocore.session.get_session().create_client("secretsmanager")
    return client.get_secret_value(SecretId=arn)["SecretString"]


def handler(event: Mapping[str, Any], _context: object = None) -> dict[str, str]:
    """Lambda entry point: ECS's lifecycle payload in, `{"hookStatus": ...}` out.

    Bad settings fail the hook (ECS then rolls back) rather than letting a revision through.
    """
    try:
        details = event.get("hookDetails") or {}
        # ECS passes the hook's JSON document; accept it still encoded too.
        settings = SmokeSettings.from_details(
            json.loads(details) if isinstance(details, str) else details
        )
    except (TypeError, ValueError) as exc:
        status, reason = FAILED, f"bad hookDetails: {exc}"
    else:
        status, reason = run(settings)
    print(
        json.dumps(
            {
                "hookStatus": status,
                "reason": reason,
                "service": event.get("serviceArn"),
                "revision": event.get("targetServiceRevisionArn"),
            }
        )
    )
    return {"hookStatus": status}
