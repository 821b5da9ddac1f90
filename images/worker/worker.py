"""Example queue worker for ecs-inference (`workers.<name>`): the starting point for your own.

Takes jobs from its SQS queue, calls the stack's AI gateway (LiteLLM, OpenAI-compatible) for each,
writes the result and deletes the message; everything the stack injects is read from the
environment (the names are the QueueWorker component's, `components/workers/service.py`):

| variable | meaning |
|---|---|
| `QUEUE_URL` | the work queue (long polled) |
| `GATEWAY_URL` | the gateway's private address (Service Connect): `http://<path>.<ns>:4000` |
| `VISIBILITY_TIMEOUT_SECONDS` | the queue's visibility timeout (longest job + margin) |
| `TASK_PROTECTION_MINUTES` | how long one job may hold ECS task scale-in protection |
| `WORKER_CONCURRENCY` | jobs at once (default 1) |
| `RESULT_QUEUE_URL` | optional (`resultQueue: true`): where results go; else they are logged |
| `GATEWAY_API_KEY` | optional secret: a LiteLLM key, sent as `x-litellm-api-key: Bearer <key>` |
| `WORKER_MODEL` | optional: the gateway model for jobs that do not name one |
| `JOB_TIMEOUT_SECONDS` | optional: one gateway call's limit (default the visibility timeout) |
| `STOP_GRACE_SECONDS` | optional: after SIGTERM, time to finish current jobs (default 110 s: |
| | ECS's stopTimeout of 120 s minus a margin) |
| `WORKER_EXIT_WHEN_IDLE` | optional `true`: exit once a receive finds the queue empty |

A job is a JSON object in the message body: an OpenAI chat-completions request (`messages`, and
`model` unless `WORKER_MODEL` is set), optionally with an `id` that is copied to the result. The
result is `{"id", "messageId", "model", "response"}` (the gateway's JSON answer).

Failure semantics (SQS does the retrying):
- success: result written, then the message deleted (a crash between the two repeats the job:
  results are at-least-once, keyed by `messageId`);
- the gateway fails, times out or answers non-2xx, or the body is not a job: the message is NOT
  deleted; it reappears after the visibility timeout, and after `maxReceiveCount` receives SQS
  moves it to the dead-letter queue (the stack's `dlq-depth` alarm);
- a job that runs long: its visibility is extended every third of the visibility timeout, so no
  other task starts the same job while it runs;
- SIGTERM (deploy, scale-in, Spot): stop polling, finish the current jobs within
  `STOP_GRACE_SECONDS`, hand any job still running back to the queue (visibility 0) and exit 0;
- while it holds a job the task has ECS scale-in protection, so scale-in picks idle tasks.

Standard library plus botocore (SQS); no web framework, no SDK beyond that.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

SQS_LONG_POLL_SECONDS = 20
SQS_RECEIVE_MAX = 10
"""ReceiveMessage returns at most 10 messages."""
SQS_MESSAGE_MAX_BYTES = 262_144
"""SendMessage body limit (256 KiB): a larger result fails the job rather than truncating it."""
ECS_STOP_TIMEOUT_SECONDS = 120
"""The component's stopTimeout (Fargate's maximum): SIGKILL follows SIGTERM after this."""
KEY_HEADER = "x-litellm-api-key"
"""LiteLLM's key header on this stack (the ALB's JWT owns `Authorization`)."""
CHAT_PATH = "/v1/chat/completions"


class JobError(Exception):
    """A job that cannot complete now; its message is left to SQS's retries."""


@dataclass(frozen=True)
class Settings:
    """What the stack injects. Defaults: concurrency 1, results logged, no key, no default model,
    job timeout = visibility timeout, 110 s stop grace, 20 s long polls, run until SIGTERM."""

    queue_url: str
    gateway_url: str
    visibility_timeout_seconds: int
    task_protection_minutes: int
    concurrency: int = 1
    result_queue_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    job_timeout_seconds: float | None = None
    stop_grace_seconds: float = ECS_STOP_TIMEOUT_SECONDS - 10
    wait_seconds: int = SQS_LONG_POLL_SECONDS
    exit_when_idle: bool = False
    agent_uri: str | None = None
    """ECS_AGENT_URI (set by ECS in every task): task scale-in protection; None: skipped."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Read the environment; a missing or malformed variable is one clear error."""

        def need(name: str) -> str:
            value = env.get(name, "").strip()
            if not value:
                raise SystemExit(f"worker: {name} is not set (the stack injects it)")
            return value

        def number(name: str, default: str | None = None, cast: Callable[[str], Any] = int):
            raw = env.get(name) or default
            if raw is None:
                raw = need(name)
            try:
                value = cast(raw)
            except ValueError:
                raise SystemExit(f"worker: {name}={raw!r} is not a number") from None
            if value <= 0:
                raise SystemExit(f"worker: {name} must be positive, got {raw}")
            return value

        visibility = number("VISIBILITY_TIMEOUT_SECONDS")
        return cls(
            queue_url=need("QUEUE_URL"),
            gateway_url=need("GATEWAY_URL").rstrip("/"),
            visibility_timeout_seconds=visibility,
            task_protection_minutes=number("TASK_PROTECTION_MINUTES"),
            concurrency=number("WORKER_CONCURRENCY", "1"),
            result_queue_url=env.get("RESULT_QUEUE_URL") or None,
            api_key=env.get("GATEWAY_API_KEY") or None,
            model=env.get("WORKER_MODEL") or None,
            job_timeout_seconds=number("JOB_TIMEOUT_SECONDS", str(visibility), float),
            stop_grace_seconds=number(
                "STOP_GRACE_SECONDS", str(ECS_STOP_TIMEOUT_SECONDS - 10), float
            ),
            exit_when_idle=env.get("WORKER_EXIT_WHEN_IDLE", "").lower() in ("1", "true", "yes"),
            agent_uri=env.get("ECS_AGENT_URI") or None,
        )


def log(event: str, **fields: Any) -> None:
    """One JSON line on stdout (awslogs ships it to the worker's log group)."""
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def parse_job(body: str, default_model: str | None) -> dict[str, Any]:
    """The chat-completions request of one message body (non-streaming)."""
    try:
        job = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JobError(f"body is not JSON: {exc.msg}") from None
    if not isinstance(job, dict) or not isinstance(job.get("messages"), list):
        raise JobError("body must be a JSON object with a `messages` list")
    request = {k: v for k, v in job.items() if k != "id"}
    request.setdefault("model", default_model)
    if not request["model"]:
        raise JobError("the job names no `model` and WORKER_MODEL is not set")
    # One answer per job: a stream would only be reassembled here.
    request["stream"] = False
    return request


def call_gateway(settings: Settings, request: Mapping[str, Any]) -> dict[str, Any]:
    """POST the request to the gateway; its JSON answer, or JobError on any failure."""
    headers = {"content-type": "application/json"}
    if settings.api_key:
        headers[KEY_HEADER] = f"Bearer {settings.api_key}"
    http = urllib.request.Request(
        settings.gateway_url + CHAT_PATH,
        data=json.dumps(request).encode(),
        headers=headers,
        method="POST",
    )
    try:
        with urllib.request.urlopen(http, timeout=settings.job_timeout_seconds) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode(errors="replace")
        raise JobError(f"gateway answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise JobError(f"gateway unreachable: {exc}") from None
    except json.JSONDecodeError:
        raise JobError("gateway answered something that is not JSON") from None


class TaskProtection:
    """ECS task scale-in protection through the agent's endpoint (`$ECS_AGENT_URI`), held while
    any job runs. Failures are logged: protection narrows a race, it is not correctness (an
    interrupted job returns to the queue)."""

    def __init__(self, agent_uri: str | None, minutes: int) -> None:
        self._url = (
            None if agent_uri is None else agent_uri.rstrip("/") + "/task-protection/v1/state"
        )
        self._minutes = minutes

    def set(self, enabled: bool) -> None:
        if self._url is None:
            return
        body: dict[str, Any] = {"ProtectionEnabled": enabled}
        if enabled:
            body["ExpiresInMinutes"] = self._minutes
        request = urllib.request.Request(
            self._url,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="PUT",
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
        except (urllib.error.URLError, OSError) as exc:
            log("task-protection-failed", enabled=enabled, error=str(exc))


@dataclass
class _Job:
    message_id: str
    receipt: str
    started: float
    handed_back: bool = False
    thread: threading.Thread | None = field(default=None, repr=False)


class Worker:
    """The poll loop. `sqs` is a botocore SQS client; `gateway` calls the model (default
    `call_gateway`)."""

    def __init__(
        self,
        settings: Settings,
        sqs: Any,
        *,
        gateway: Callable[[Settings, Mapping[str, Any]], dict[str, Any]] = call_gateway,
        protection: TaskProtection | None = None,
    ) -> None:
        self.settings = settings
        self.sqs = sqs
        self.gateway = gateway
        self.protection = protection or TaskProtection(
            settings.agent_uri, settings.task_protection_minutes
        )
        self.stopping = threading.Event()
        self._changed = threading.Condition()
        self._protecting = threading.Lock()
        self._jobs: dict[str, _Job] = {}

    # -- control ---------------------------------------------------------------------------

    def stop(self, *_: object) -> None:
        """Stop polling (the SIGTERM/SIGINT handler); current jobs finish."""
        if not self.stopping.is_set():
            log("stopping", in_flight=len(self._jobs))
        self.stopping.set()
        with self._changed:
            self._changed.notify_all()

    def run(self) -> int:
        """Poll until stopped (or idle, with `exit_when_idle`), then drain; the exit code."""
        previous = (
            {s: signal.signal(s, self.stop) for s in (signal.SIGTERM, signal.SIGINT)}
            if threading.current_thread() is threading.main_thread()
            else {}
        )
        heartbeat = threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True)
        heartbeat.start()
        try:
            self._poll()
            return self._drain()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # -- polling ---------------------------------------------------------------------------

    def _poll(self) -> None:
        while not self.stopping.is_set():
            with self._changed:
                free = self.settings.concurrency - len(self._jobs)
                if free <= 0:
                    self._changed.wait(timeout=1)
                    continue
            response = self.sqs.receive_message(
                QueueUrl=self.settings.queue_url,
                MaxNumberOfMessages=min(free, SQS_RECEIVE_MAX),
                WaitTimeSeconds=self.settings.wait_seconds,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            )
            messages = response.get("Messages", [])
            if self.stopping.is_set():
                # SIGTERM arrived during the long poll: these were never started.
                for message in messages:
                    self._hand_back(message["ReceiptHandle"], message["MessageId"])
                return
            if not messages and self.settings.exit_when_idle:
                log("idle")
                return
            for message in messages:
                self._start(message)

    def _start(self, message: Mapping[str, Any]) -> None:
        job = _Job(message["MessageId"], message["ReceiptHandle"], time.monotonic())
        with self._protecting:
            with self._changed:
                self._jobs[job.receipt] = job
                first = len(self._jobs) == 1
            if first:
                self.protection.set(True)
        job.thread = threading.Thread(
            target=self._work, args=(job, message), name=f"job-{job.message_id}", daemon=True
        )
        job.thread.start()

    def _work(self, job: _Job, message: Mapping[str, Any]) -> None:
        receives = message.get("Attributes", {}).get("ApproximateReceiveCount")
        try:
            request = parse_job(message["Body"], self.settings.model)
            log("job-started", messageId=job.message_id, model=request["model"], receives=receives)
            answer = self.gateway(self.settings, request)
            self._write_result(job, message, request, answer)
            if job.handed_back:
                log("job-finished-after-hand-back", messageId=job.message_id)
                return
            self.sqs.delete_message(QueueUrl=self.settings.queue_url, ReceiptHandle=job.receipt)
            log(
                "job-done",
                messageId=job.message_id,
                seconds=round(time.monotonic() - job.started, 3),
            )
        except JobError as exc:
            # Not deleted: SQS makes it visible again after the visibility timeout, and moves it
            # to the dead-letter queue after maxReceiveCount receives.
            log("job-failed", messageId=job.message_id, receives=receives, error=str(exc))
        except Exception as exc:  # a job's failure must never stop the worker
            log("job-failed", messageId=job.message_id, receives=receives, error=repr(exc))
        finally:
            # Protection is released before the job leaves the table, so the drain (and the
            # process exit) waits for it; the lock keeps a starting job from racing the release.
            with self._protecting:
                with self._changed:
                    last = len(self._jobs) == 1
                if last:
                    self.protection.set(False)
                with self._changed:
                    self._jobs.pop(job.receipt, None)
                    self._changed.notify_all()

    def _write_result(
        self,
        job: _Job,
        message: Mapping[str, Any],
        request: Mapping[str, Any],
        answer: Mapping[str, Any],
    ) -> None:
        try:
            job_id = json.loads(message["Body"]).get("id")
        except (json.JSONDecodeError, AttributeError):
            job_id = None
        result = {
            "id": job_id,
            "messageId": job.message_id,
            "model": request["model"],
            "response": answer,
        }
        body = json.dumps(result)
        if self.settings.result_queue_url is None:
            log("result", **result)
            return
        if len(body.encode()) > SQS_MESSAGE_MAX_BYTES:
            raise JobError(
                f"result is {len(body.encode())} bytes; SQS messages hold at most "
                f"{SQS_MESSAGE_MAX_BYTES}"
            )
        self.sqs.send_message(QueueUrl=self.settings.result_queue_url, MessageBody=body)

    # -- visibility --------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        """Every third of the visibility timeout, push the visibility of every job that has
        run that long a full timeout ahead, so no other task starts it meanwhile."""
        interval = max(self.settings.visibility_timeout_seconds / 3, 1.0)
        while True:
            time.sleep(interval)
            with self._changed:
                jobs = [j for j in self._jobs.values() if not j.handed_back]
            now = time.monotonic()
            for job in jobs:
                if now - job.started < interval:
                    continue
                try:
                    self.sqs.change_message_visibility(
                        QueueUrl=self.settings.queue_url,
                        ReceiptHandle=job.receipt,
                        VisibilityTimeout=self.settings.visibility_timeout_seconds,
                    )
                    log(
                        "visibility-extended",
                        messageId=job.message_id,
                        seconds=self.settings.visibility_timeout_seconds,
                    )
                except Exception as exc:  # SQS caps a message at 12 h
                    log("visibility-extension-failed", messageId=job.message_id, error=repr(exc))

    def _hand_back(self, receipt: str, message_id: str) -> None:
        """Make a message visible again now, for another task."""
        try:
            self.sqs.change_message_visibility(
                QueueUrl=self.settings.queue_url, ReceiptHandle=receipt, VisibilityTimeout=0
            )
            log("handed-back", messageId=message_id)
        except Exception as exc:  # it returns after its timeout
            log("hand-back-failed", messageId=message_id, error=repr(exc))

    def _drain(self) -> int:
        """Wait for current jobs up to the stop grace; hand back what is still running."""
        deadline = time.monotonic() + self.settings.stop_grace_seconds
        with self._changed:
            while self._jobs and time.monotonic() < deadline:
                self._changed.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            left = list(self._jobs.values())
            for job in left:
                job.handed_back = True
        for job in left:
            self._hand_back(job.receipt, job.message_id)
        log("stopped", handed_back=len(left))
        return 0


def main() -> int:
    import botocore.session  # the image's one dependency; imported here so tests can fake it

    settings = Settings.from_env(os.environ)
    sqs = botocore.session.get_session().create_client("sqs")
    log(
        "starting",
        queue=settings.queue_url,
        gateway=settings.gateway_url,
        concurrency=settings.concurrency,
        results=settings.result_queue_url or "log",
    )
    return Worker(settings, sqs).run()


if __name__ == "__main__":
    sys.exit(main())
