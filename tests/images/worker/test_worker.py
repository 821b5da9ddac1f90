"""The example worker image (`images/worker/worker.py`) against fakes, offline: SQS is a real
botocore client whose requests are validated against the SQS model and answered by botocore's
Stubber (or a recording fake where thread timing decides the order), the gateway and the ECS agent
are local HTTP servers.

Covered: a job goes to the gateway and its result to the result queue before the delete; a gateway
failure leaves the message for SQS to retry; a long job's visibility is extended; SIGTERM mid-job
stops polling, finishes the job and exits 0, or hands the job back when it outlasts the grace;
task scale-in protection is held while a job runs; the names it reads are the ones the stack
injects."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from ecs_inference.contracts import litellm
from ecs_inference.contracts import worker as worker_contract
from ecs_inference.workers import queues as worker_spec
from ecs_inference.workers import service as worker_component
from tests.aws_shapes import validate_shape

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "images" / "worker" / "worker.py"
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/ecs-inference-agents-summarise"
RESULTS = QUEUE + "-results"


def _load():
    spec = importlib.util.spec_from_file_location("ecs_inference_example_worker", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first: its dataclasses resolve their annotations through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


w = _load()


# ------------------------------------------------------------------------------------------------
# fakes
# ------------------------------------------------------------------------------------------------


class FakeHttp:
    """A local HTTP server recording each request; `respond(handler)` decides the answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.answer: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "A summary."}}],
        }
        self.on_request: Any = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                if fake.on_request is not None:
                    fake.on_request()
                payload = json.dumps(fake.answer if fake.status == 200 else {"error": "boom"})
                self.send_response(fake.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            do_POST = _handle  # noqa: N815 - http.server's naming
            do_PUT = _handle  # noqa: N815

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway() -> Iterator[FakeHttp]:
    fake = FakeHttp()
    yield fake
    fake.close()


@pytest.fixture
def agent() -> Iterator[FakeHttp]:
    fake = FakeHttp()
    fake.answer = {}
    yield fake
    fake.close()


def sqs_client():
    return botocore.session.get_session().create_client(
        "sqs",
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="example",
    )


def calls_of(client) -> list[str]:
    """Every operation the client is asked for, stubbed or not."""
    calls: list[str] = []
    client.meta.events.register(
        "provide-client-params.sqs.*", lambda model, **_: calls.append(model.name)
    )
    return calls


def settings(gateway: FakeHttp, agent: FakeHttp | None = None, **overrides: Any):
    values: dict[str, Any] = {
        "queue_url": QUEUE,
        "gateway_url": gateway.url,
        "visibility_timeout_seconds": 300,
        "task_protection_minutes": 5,
        "api_key": "sk-worker",
        "model": "llama-3.1-8b",
        "wait_seconds": 1,
        "exit_when_idle": True,
        "agent_uri": None if agent is None else agent.url,
    }
    values.update(overrides)
    return w.Settings(**values)


def message(n: int = 1, body: dict[str, Any] | str | None = None) -> dict[str, Any]:
    job = (
        body
        if body is not None
        else {"id": f"job-{n}", "messages": [{"role": "user", "content": "Summarise."}]}
    )
    return {
        "MessageId": f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd",
        "ReceiptHandle": f"receipt-{n}",
        "MD5OfBody": "0" * 32,
        "Body": job if isinstance(job, str) else json.dumps(job),
        "Attributes": {"ApproximateReceiveCount": "1"},
    }


RECEIVE = {
    "QueueUrl": QUEUE,
    "MaxNumberOfMessages": 1,
    "WaitTimeSeconds": 1,
    "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
}


def run_in_main_thread(worker, watchdog_seconds: float = 30.0) -> tuple[int, float]:
    """Run the worker as the image does (main thread, signal handlers), with a watchdog."""
    timer = threading.Timer(watchdog_seconds, worker.stop)
    timer.start()
    started = time.monotonic()
    try:
        return worker.run(), time.monotonic() - started
    finally:
        timer.cancel()


def events(capsys) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


# ------------------------------------------------------------------------------------------------
# the scenarios
# ------------------------------------------------------------------------------------------------


def test_success_calls_the_gateway_writes_the_result_then_deletes(gateway, agent, capsys):
    client = sqs_client()
    calls = calls_of(client)
    with Stubber(client) as stub:
        stub.add_response("receive_message", {"Messages": [message(1)]}, RECEIVE)
        stub.add_response(
            "send_message",
            {"MessageId": "11111111-2222-3333-4444-555555555555", "MD5OfMessageBody": "0" * 32},
        )
        stub.add_response("delete_message", {}, {"QueueUrl": QUEUE, "ReceiptHandle": "receipt-1"})
        stub.add_response("receive_message", {}, RECEIVE)
        worker = w.Worker(settings(gateway, agent, result_queue_url=RESULTS), client)
        code, _ = run_in_main_thread(worker)
        stub.assert_no_pending_responses()
    assert code == 0
    assert calls == ["ReceiveMessage", "SendMessage", "DeleteMessage", "ReceiveMessage"]
    (request,) = gateway.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"][litellm.KEY_HEADER] == "Bearer sk-worker"
    assert "authorization" not in request["headers"]  # the ALB's JWT header is not LiteLLM's
    assert request["body"]["model"] == "llama-3.1-8b" and request["body"]["stream"] is False
    assert "id" not in request["body"]
    # Scale-in protection for the job's duration, then released.
    bodies = [r["body"] for r in agent.requests]
    assert [r["path"] for r in agent.requests] == ["/task-protection/v1/state"] * 2
    assert bodies == [
        {"ProtectionEnabled": True, "ExpiresInMinutes": 5},
        {"ProtectionEnabled": False},
    ]
    done = [e for e in events(capsys) if e["event"] == "job-done"]
    assert len(done) == 1


def test_the_result_message_is_a_valid_send_message(gateway):
    client = sqs_client()
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.sqs.SendMessage", lambda params, **_: sent.append(dict(params))
    )
    with Stubber(client) as stub:
        stub.add_response("receive_message", {"Messages": [message(7)]}, RECEIVE)
        stub.add_response("send_message", {"MessageId": "m", "MD5OfMessageBody": "0" * 32})
        stub.add_response("delete_message", {})
        stub.add_response("receive_message", {}, RECEIVE)
        run_in_main_thread(w.Worker(settings(gateway, result_queue_url=RESULTS), client))
    (params,) = sent
    validate_shape("sqs", "SendMessage", params)
    assert params["QueueUrl"] == RESULTS
    result = json.loads(params["MessageBody"])
    assert result["id"] == "job-7" and result["messageId"] == message(7)["MessageId"]
    assert result["response"]["choices"][0]["message"]["content"] == "A summary."


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, None),  # the gateway fails
        (429, None),  # rate limited by LiteLLM
        (200, "not json"),  # a malformed job never reaches the gateway
        (200, {"messages": "not a list"}),
    ],
)
def test_a_failed_job_is_not_deleted_and_returns_to_the_queue(gateway, agent, capsys, status, body):
    gateway.status = status
    client = sqs_client()
    calls = calls_of(client)
    with Stubber(client) as stub:
        stub.add_response("receive_message", {"Messages": [message(2, body)]}, RECEIVE)
        stub.add_response("receive_message", {}, RECEIVE)
        code, _ = run_in_main_thread(w.Worker(settings(gateway, agent), client))
        stub.assert_no_pending_responses()
    assert code == 0
    assert "DeleteMessage" not in calls and calls == ["ReceiveMessage", "ReceiveMessage"]
    failed = [e for e in events(capsys) if e["event"] == "job-failed"]
    assert len(failed) == 1 and failed[0]["receives"] == "1"
    # Protection is released after a failure too.
    assert agent.requests[-1]["body"] == {"ProtectionEnabled": False}


def test_a_gateway_that_does_not_answer_is_a_failure_not_a_hang(capsys):
    client = sqs_client()
    calls = calls_of(client)

    class Refused:
        url = "http://127.0.0.1:9"  # discard port: nothing listens

    with Stubber(client) as stub:
        stub.add_response("receive_message", {"Messages": [message(3)]}, RECEIVE)
        stub.add_response("receive_message", {}, RECEIVE)
        run_in_main_thread(w.Worker(settings(Refused, job_timeout_seconds=2), client))  # type: ignore[arg-type]
    assert "DeleteMessage" not in calls
    assert any("unreachable" in e.get("error", "") for e in events(capsys))


class RecordingSqs:
    """SQS for the timing-dependent scenarios: validates every request against botocore's model
    and records it; answers one message, then nothing."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = list(messages)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def _record(self, operation: str, params: dict[str, Any]) -> None:
        validate_shape("sqs", operation, params)
        with self.lock:
            self.calls.append((operation, params))

    def receive_message(self, **params: Any) -> dict[str, Any]:
        self._record("ReceiveMessage", params)
        if self.messages:
            return {"Messages": [self.messages.pop(0)]}
        time.sleep(0.05)
        return {}

    def delete_message(self, **params: Any) -> dict[str, Any]:
        self._record("DeleteMessage", params)
        return {}

    def change_message_visibility(self, **params: Any) -> dict[str, Any]:
        self._record("ChangeMessageVisibility", params)
        return {}

    def send_message(self, **params: Any) -> dict[str, Any]:
        self._record("SendMessage", params)
        return {"MessageId": "m"}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def test_a_long_job_gets_its_visibility_extended_before_it_would_reappear(gateway):
    gateway.on_request = lambda: time.sleep(2.6)
    sqs = RecordingSqs([message(4)])
    code, _ = run_in_main_thread(w.Worker(settings(gateway, visibility_timeout_seconds=3), sqs))
    assert code == 0
    extensions = [p for name, p in sqs.calls if name == "ChangeMessageVisibility"]
    assert extensions, sqs.names()
    assert all(
        p == {"QueueUrl": QUEUE, "ReceiptHandle": "receipt-4", "VisibilityTimeout": 3}
        for p in extensions
    )
    names = sqs.names()
    # Extended while running, deleted once, after the last extension.
    assert names.count("DeleteMessage") == 1
    assert names.index("DeleteMessage") > max(
        i for i, n in enumerate(names) if n == "ChangeMessageVisibility"
    )


def test_sigterm_mid_job_stops_polling_finishes_the_job_and_exits_zero(gateway, capsys):
    release = threading.Event()

    def on_request() -> None:
        # ECS stops the task while the job is at the gateway.
        os.kill(os.getpid(), signal.SIGTERM)
        release.wait(1.0)

    gateway.on_request = on_request
    sqs = RecordingSqs([message(5), message(6)])
    worker = w.Worker(settings(gateway, exit_when_idle=False, stop_grace_seconds=20), sqs)
    code, elapsed = run_in_main_thread(worker)
    assert code == 0 and elapsed < 15
    # One receive (message 5), no poll after SIGTERM, the job finished and was deleted.
    assert sqs.names() == ["ReceiveMessage", "DeleteMessage"]
    assert sqs.calls[1][1]["ReceiptHandle"] == "receipt-5"
    assert [e["event"] for e in events(capsys)][-1] == "stopped"
    assert signal.getsignal(signal.SIGTERM) is not worker.stop  # handlers restored


def test_sigterm_with_a_job_outlasting_the_grace_hands_it_back(gateway):
    release = threading.Event()

    def on_request() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        release.wait(5.0)

    gateway.on_request = on_request
    sqs = RecordingSqs([message(8)])
    worker = w.Worker(settings(gateway, exit_when_idle=False, stop_grace_seconds=0.5), sqs)
    try:
        code, elapsed = run_in_main_thread(worker)
    finally:
        release.set()
    assert code == 0 and elapsed < 4
    assert sqs.names() == ["ReceiveMessage", "ChangeMessageVisibility"]
    assert sqs.calls[1][1] == {
        "QueueUrl": QUEUE,
        "ReceiptHandle": "receipt-8",
        "VisibilityTimeout": 0,
    }
    time.sleep(0.3)  # the job thread finishes later and must not delete a handed-back message
    assert "DeleteMessage" not in sqs.names()


# ------------------------------------------------------------------------------------------------
# the contract with the stack
# ------------------------------------------------------------------------------------------------


def test_it_reads_exactly_what_the_stack_injects():
    env = {
        worker_contract.ENV_QUEUE_URL: QUEUE,
        worker_contract.ENV_GATEWAY_URL: "http://gateway.inference-agents:4000/",
        worker_contract.ENV_VISIBILITY_TIMEOUT: "990",
        worker_contract.ENV_TASK_PROTECTION_MINUTES: "17",
        worker_contract.ENV_CONCURRENCY: "4",
        worker_contract.ENV_RESULT_QUEUE_URL: RESULTS,
    }
    assert set(env) == set(worker_spec.MANAGED_ENV)
    s = w.Settings.from_env(env)
    assert (s.queue_url, s.gateway_url, s.result_queue_url) == (
        QUEUE,
        "http://gateway.inference-agents:4000",
        RESULTS,
    )
    assert (s.visibility_timeout_seconds, s.task_protection_minutes, s.concurrency) == (990, 17, 4)
    assert s.job_timeout_seconds == 990
    # It must stop within what ECS waits after SIGTERM.
    assert s.stop_grace_seconds < worker_component.WORKER_STOP_TIMEOUT_SECONDS
    assert w.ECS_STOP_TIMEOUT_SECONDS == worker_component.WORKER_STOP_TIMEOUT_SECONDS
    assert w.KEY_HEADER == litellm.KEY_HEADER
    assert w.SQS_LONG_POLL_SECONDS == 20


@pytest.mark.parametrize(
    ("missing", "bad"),
    [
        ("QUEUE_URL", None),
        (None, ("VISIBILITY_TIMEOUT_SECONDS", "soon")),
        (None, ("WORKER_CONCURRENCY", "0")),
    ],
)
def test_a_bad_environment_is_one_clear_error(missing, bad):
    env = {
        "QUEUE_URL": QUEUE,
        "GATEWAY_URL": "http://gateway:4000",
        "VISIBILITY_TIMEOUT_SECONDS": "60",
        "TASK_PROTECTION_MINUTES": "1",
    }
    if missing:
        env.pop(missing)
    if bad:
        env[bad[0]] = bad[1]
    with pytest.raises(SystemExit, match=missing or bad[0]):
        w.Settings.from_env(env)
