"""Lambda: functions (their code archive zipped as the provider uploads it) and invocations."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from typing import Any

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps
from tools.aws_shapes import UNKNOWN

ASSETS = "assets"
"""Where a recorded archive (`pulumi.AssetArchive`) keeps its members: name -> asset."""


def zipped(archive: Any) -> Any:
    """The bytes the provider uploads as `Code.ZipFile` for an archive of text assets; UNKNOWN
    for one whose members are not text held in the program (a path, a remote archive)."""
    members = archive.get(ASSETS) if isinstance(archive, Mapping) else None
    if not isinstance(members, Mapping) or not members:
        return UNKNOWN
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, asset in sorted(members.items()):
            text = asset.get("text") if isinstance(asset, Mapping) else None
            if not isinstance(text, str):
                return UNKNOWN
            out.writestr(name, text)
    return buffer.getvalue()


@maps("aws:lambda/function:Function")
def _function(i: Inputs, name: str | None) -> list[ApiRequest]:
    environment = i.get("environment")
    logging = i.get("loggingConfig")
    return [
        ApiRequest(
            "lambda",
            "CreateFunction",
            drop_none(
                {
                    "FunctionName": name,
                    "Runtime": i.get("runtime"),
                    "Role": i.get("role"),
                    "Handler": i.get("handler"),
                    "Code": {"ZipFile": zipped(i.get("code"))} if i.get("code") else None,
                    "Description": i.get("description"),
                    "Timeout": i.get("timeout"),
                    "MemorySize": i.get("memorySize"),
                    "Architectures": i.get("architectures"),
                    "Environment": {"Variables": environment.get("variables")}
                    if isinstance(environment, Mapping)
                    else None,
                    "LoggingConfig": drop_none(
                        {
                            "LogFormat": logging.get("logFormat"),
                            "LogGroup": logging.get("logGroup"),
                        }
                    )
                    if isinstance(logging, Mapping)
                    else None,
                }
            ),
        )
    ]


@maps("aws:lambda/invocation:Invocation")
def _invocation(i: Inputs, name: str | None) -> list[ApiRequest]:
    payload = i.get("input")
    return [
        ApiRequest(
            "lambda",
            "Invoke",
            drop_none(
                {
                    "FunctionName": i.get("functionName"),
                    "Qualifier": i.get("qualifier"),
                    "Payload": payload.encode() if isinstance(payload, str) else payload,
                }
            ),
        )
    ]
