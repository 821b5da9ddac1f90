"""One-off work the stack runs in Lambda during `pulumi up` (`aws:lambda/invocation`), as Lambda
runs it.

For every invocation of one of the stack's functions, Lambda with the function's execution
role ("Lambda execution role"):
- is allowed to assume the role (its trust policy; `services.trust_checks`);
- writes the run's log stream in `/aws/lambda/<function name>`, or the group its
  `loggingConfig` names (`logs:CreateLogStream`, `logs:PutLogEvents`);
- makes the calls the function's code makes for the input the invocation sends: a function
  whose code is a contract's handler (`HANDLERS`) declares them beside that code, from the event
  as AWS receives it (the invocation's `input`), never from the grant the program writes.
A function whose code no contract describes makes no declared call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ecs_inference.contracts import litellm
from ecs_inference.contracts.aws_calls import AwsCall
from tools.rehearsal.calls import Call, Refusal, Unverified, session_arn
from tools.rehearsal.model import StackModel, known

FUNCTION = "aws:lambda/function:Function"
INVOCATION = "aws:lambda/invocation:Invocation"
REQUEST_ID = "2026/01/01/[$LATEST]0123456789abcdef0123456789abcdef"
"""A log stream name of Lambda's shape (`<date>/[<version>]<id>`)."""

HANDLERS: Mapping[tuple[str, str], Callable[[Mapping[str, Any]], Sequence[AwsCall]]] = {
    (litellm.BOOTSTRAP_HANDLER_FILE, litellm.BOOTSTRAP_HANDLER_SOURCE): litellm.bootstrap_aws_calls,
}
"""(file, source) of a contract's handler -> the calls it makes for one event."""


def _code_calls(function: Any) -> Callable[[Mapping[str, Any]], Sequence[AwsCall]] | None:
    members = (function.inputs.get("code") or {}).get("assets") or {}
    for (file, source), calls in HANDLERS.items():
        asset = members.get(file) if isinstance(members, Mapping) else None
        if isinstance(asset, Mapping) and asset.get("text") == source:
            return calls
    return None


def function_checks(model: StackModel) -> Iterator[Call | Unverified | Refusal]:
    """Every invocation's run: its log stream and its code's calls, with the function's role."""
    for invocation in model.of(INVOCATION):
        function = model.by_name(invocation.inputs.get("functionName"), FUNCTION)
        if function is None:
            continue
        who = f"function {function.name} invoked by {invocation.name}"
        role = model.role(function.inputs.get("role"))
        if role is None:
            yield Unverified(function, who, "its role is not in this stack")
            continue
        name = model.output(function, "name") or function.inputs.get("name")
        principal = session_arn(role, model.account_id, str(name))
        group = ((function.inputs.get("loggingConfig") or {}).get("logGroup")) or (
            f"/aws/lambda/{name}"
        )
        stream = f"{model.arn('logs', f'log-group:{group}')}:log-stream:{REQUEST_ID}"
        calls = [
            AwsCall(action, stream, f"write the run's output to {group}")
            for action in ("logs:CreateLogStream", "logs:PutLogEvents")
        ]
        code = _code_calls(function)
        event = invocation.inputs.get("input")
        if code is not None and not (known(event) and isinstance(event, str)):
            yield Unverified(function, who, "its input is unknown at preview")
        elif code is not None and isinstance(event, str):
            calls += code(json.loads(event))
        for call in calls:
            yield Call(
                function,
                who,
                principal,
                call.action,
                call.resource,
                call.why,
                role=role,
                account_id=model.account_id,
            )
