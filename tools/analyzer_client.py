"""Drive a Pulumi policy pack over the analyzer gRPC protocol, the way the Pulumi CLI does.

Used by the offline preview (no Pulumi CLI, no cloud) and by the policy pack's tests. What the
CLI does, and this module repeats (pulumi ``pkg/engine`` + ``sdk/go/common/resource/plugin``):

1. start the pack (``python <pack>/__main__.py``); the pack prints its gRPC port on stdout;
2. ``ConfigureStack`` with stack, project, organization and dry-run (UNIMPLEMENTED is fine);
3. ``GetAnalyzerInfo``; the version in ``PulumiPolicy.yaml`` wins over the reported one;
4. reconcile the config like ``ReconcilePolicyPackConfig``: every policy's schema defaults and
   enforcement level, then the pack's initial config, then the ``--policy-pack-config`` file
   (whose ``"all"`` key sets every level first); validate each policy's properties against its
   schema; ``Configure`` with the result (always, when the pack supports config);
5. ``Analyze`` once per registered resource, in registration order, with its inputs, its
   resource options and its provider resource. The engine does this for every registration:
   the root stack, custom resources, components and provider resources alike;
6. ``AnalyzeStack`` once with every resource's outputs, parent, dependencies and property
   dependencies.

:meth:`PolicyPackProcess.analyze_view` sends a stack as the engine builds it
(``tools.views.engine``: checked inputs, outputs, default providers, the root stack);
:meth:`PolicyPackProcess.analyze` sends records as given (inputs for both calls).

Unknown values travel as the engine's unknown sentinel string
(``pulumi.runtime.rpc.UNKNOWN``), which pulumi_policy turns into ``UnknownValueError`` inside a
rule. A diagnostic at level ``remediate`` is reported as ``mandatory``, as the engine does.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

ENFORCEMENT_LEVELS = ("advisory", "mandatory", "remediate", "disabled")
_LEVEL_TO_PROTO = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}
_PROTO_TO_LEVEL = {v: k for k, v in _LEVEL_TO_PROTO.items()}
# Same ceiling pulumi_policy sets on its server: stacks with big inputs exceed gRPC's 4 MiB.
_MAX_MESSAGE = 400 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ("grpc.max_send_message_length", _MAX_MESSAGE),
]


class PolicyConfigError(ValueError):
    """The policy pack config file (or its reconciliation with the pack's schemas) is invalid."""


class PolicyPackError(RuntimeError):
    """The policy pack process failed to start or to answer."""


@dataclass(frozen=True)
class PolicyViolation:
    """One diagnostic returned by the pack.

    ``enforcement_level`` is "advisory", "mandatory" or "disabled" ("remediate" is reported as
    "mandatory"); ``stage`` is "resource" (from Analyze) or "stack" (from AnalyzeStack).
    """

    policy_name: str
    description: str
    message: str
    enforcement_level: str
    urn: str | None
    stage: str
    view: str = ""
    """The engine view it was found in (tools.views), when the caller names one."""


# --- config ----------------------------------------------------------------------------------


def load_policy_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``--policy-pack-config`` JSON file, validated the way the CLI parses it.

    Top level: an object mapping a policy name (or ``"all"``) to either an enforcement level
    string or an object with an optional ``enforcementLevel`` and config properties. An empty
    file is an empty config. Raises :class:`PolicyConfigError` naming the file and the problem.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise PolicyConfigError(
            f"{file}: cannot read policy pack config: {error.strerror}"
        ) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PolicyConfigError(
            f"{file}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise PolicyConfigError(f"{file}: policy pack config must be a JSON object")
    problems: list[str] = []
    for key, value in data.items():
        if isinstance(value, str):
            problems += _level_problems(key, value)
        elif isinstance(value, dict):
            if "enforcementLevel" in value:
                level = value["enforcementLevel"]
                if not isinstance(level, str):
                    problems.append(
                        f"{key}.enforcementLevel: {level!r} is not a valid enforcement level; "
                        "must be a string"
                    )
                else:
                    problems += _level_problems(key, level)
        else:
            problems.append(
                f"{key}: {json.dumps(value)} is not a valid value; must be a string or object"
            )
    if len(problems) == 1:
        raise PolicyConfigError(f"{file}: {problems[0]}")
    if problems:
        raise PolicyConfigError(
            f"{file}: {len(problems)} problems:\n  " + "\n  ".join(f"{p}" for p in problems)
        )
    return data


def _level_problems(key: str, level: str) -> list[str]:
    if level in ENFORCEMENT_LEVELS:
        return []
    return [
        f"{key}: {level!r} is not a valid enforcement level "
        f"(one of {', '.join(ENFORCEMENT_LEVELS)})"
    ]


def _split(value: Any) -> tuple[str | None, dict[str, Any]]:
    """A config entry as (enforcement level or None, properties)."""
    if isinstance(value, str):
        return value, {}
    props = dict(value or {})
    level = props.pop("enforcementLevel", None)
    return level, props


def _unknown_names(policies: list[Mapping[str, Any]], config: Mapping[str, Any]) -> list[str]:
    """What the config names that the pack does not have, in the pack's own wording (its
    Configure refuses the same; here every problem of the file is reported together)."""
    schemas = {
        str(p["name"]): (p.get("configSchema") or {}).get("properties") or {} for p in policies
    }
    problems = []
    for name, value in config.items():
        _, props = _split(value)
        if name == "all":
            problems += [f"all: {key}: 'all' sets only enforcementLevel" for key in sorted(props)]
        elif name not in schemas:
            close = difflib.get_close_matches(name, list(schemas), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            problems.append(f"{name}: no such policy in this pack{hint}")
        else:
            problems += [
                f"{name}: Additional property {key} is not allowed"
                for key in sorted(props)
                if key not in schemas[name]
            ]
    return problems


def reconcile_config(
    policies: Iterable[Mapping[str, Any]],
    initial_config: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
) -> dict[str, dict[str, Any]]:
    """Final per-policy config, as the CLI's ``ReconcilePolicyPackConfig`` computes it.

    ``policies`` are ``info()["policies"]`` entries. Returns ``{policy: {"enforcementLevel":
    level, "properties": {...}}}``; raises :class:`PolicyConfigError` listing every schema
    violation (``"<policy>: <problem>"``).
    """
    policies = list(policies)
    result: dict[str, dict[str, Any]] = {}
    for policy in policies:
        props = {
            key: schema["default"]
            for key, schema in (policy.get("configSchema") or {}).get("properties", {}).items()
            if isinstance(schema, Mapping) and "default" in schema
        }
        result[policy["name"]] = {
            "enforcementLevel": policy["enforcementLevel"],
            "properties": props,
        }
    errors = _unknown_names(policies, config or {})
    for layer in (initial_config, config):
        if not layer:
            continue
        all_level, _ = _split(layer.get("all"))
        if all_level:
            for entry in result.values():
                entry["enforcementLevel"] = all_level
        for name, value in layer.items():
            if name == "all" or name not in result:
                continue  # reported above (unknown names, keys under `all`)
            level, props = _split(value)
            entry = result[name]
            if level:
                entry["enforcementLevel"] = level
            entry["properties"].update(props)
    for policy in policies:
        schema = policy.get("configSchema") or {}
        properties = result[policy["name"]]["properties"]
        for problem in validate_schema(
            {"type": "object", **{k: v for k, v in schema.items() if v}}, properties
        ):
            errors.append(f"{policy['name']}: {problem}")
    if errors:
        raise PolicyConfigError("invalid policy pack config:\n  " + "\n  ".join(sorted(errors)))
    return result


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "number": (int, float),
    "integer": (int, float),
    "null": (type(None),),
}


def validate_schema(schema: Mapping[str, Any], value: Any, path: str = "") -> list[str]:
    """Problems with ``value`` under the JSON Schema subset policy configs use.

    Checked: type, enum, minimum, maximum, required, properties, items. Other keywords are
    accepted without checking (the CLI uses a full JSON Schema validator).
    """
    where = path or "(root)"
    problems: list[str] = []
    expected = schema.get("type")
    if expected:
        types = [expected] if isinstance(expected, str) else list(expected)
        ok = False
        for name in types:
            kinds = _JSON_TYPES.get(name, (object,))
            if isinstance(value, bool) and name not in {"boolean"}:
                continue
            if isinstance(value, kinds) and not (
                name == "integer" and isinstance(value, float) and not value.is_integer()
            ):
                ok = True
        if not ok:
            return [
                f"{where}: invalid type; expected {' or '.join(types)}, got {json.dumps(value)}"
            ]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: must be one of {json.dumps(schema['enum'])}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where}: must be greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where}: must be less than or equal to {schema['maximum']}")
    if isinstance(value, dict):
        for key in schema.get("required") or ():
            if key not in value:
                problems.append(f"{key} is required")
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                problems.extend(validate_schema(sub, value[key], f"{path}.{key}" if path else key))
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            problems.extend(validate_schema(schema["items"], item, f"{where}.{index}"))
    return problems


# --- marshalling -----------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON-like copy of a recorded value (tuples become lists; other objects, strings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _struct(props: Mapping[str, Any] | None) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(_plain(props or {}))
    return message


def _provider_urn(reference: str | None) -> str | None:
    """The URN part of a provider reference ``<urn>::<id>``."""
    if not reference:
        return None
    return reference.rsplit("::", 1)[0] if reference.count("::") > 3 else reference


def _options(resource: Any) -> Any:
    """The analyzer's resource options of a record (only ``parent`` when it has no
    ``options``)."""
    options = getattr(resource, "options", None)
    message = analyzer_pb2.AnalyzerResourceOptions(parent=resource.parent or "")
    if options is None:
        return message
    message.protect = options.protect
    message.ignoreChanges.extend(options.ignore_changes)
    if options.delete_before_replace is not None:
        message.deleteBeforeReplace = options.delete_before_replace
        message.deleteBeforeReplaceDefined = True
    message.additionalSecretOutputs.extend(options.additional_secret_outputs)
    message.aliases.extend(options.aliases)
    create, update, delete = options.custom_timeouts
    message.customTimeouts.create, message.customTimeouts.update = create, update
    message.customTimeouts.delete = delete
    return message


def _provider(resource: Any, by_urn: Mapping[str, Any]) -> Any:
    urn = _provider_urn(getattr(resource, "provider", None))
    provider = by_urn.get(urn) if urn else None
    if provider is None:
        return None
    return analyzer_pb2.AnalyzerProviderResource(
        type=provider.type,
        properties=_struct(provider.inputs),
        urn=provider.urn,
        name=provider.name,
    )


def analyze_requests(resources: Sequence[Any]) -> list[Any]:
    """The ``Analyze`` requests for ``resources`` (see :meth:`PolicyPackProcess.analyze`),
    one per resource, in order."""
    by_urn = {r.urn: r for r in resources}
    requests = []
    for resource in resources:
        request = analyzer_pb2.AnalyzeRequest(
            type=resource.type,
            properties=_struct(resource.inputs),
            urn=resource.urn,
            name=resource.name,
            options=_options(resource),
        )
        provider = _provider(resource, by_urn)
        if provider is not None:
            request.provider.CopyFrom(provider)
        requests.append(request)
    return requests


def analyze_stack_request(resources: Sequence[Any], *, outputs: bool = False) -> Any:
    """The ``AnalyzeStack`` request for ``resources`` (see :meth:`PolicyPackProcess.analyze`):
    each one's ``outputs`` when ``outputs`` is set, else its ``inputs``."""
    by_urn = {r.urn: r for r in resources}
    stack_request = analyzer_pb2.AnalyzeStackRequest()
    for resource in resources:
        item = stack_request.resources.add()
        item.type = resource.type
        item.urn = resource.urn
        item.name = resource.name
        item.properties.CopyFrom(_struct(resource.outputs if outputs else resource.inputs))
        item.options.CopyFrom(_options(resource))
        item.parent = resource.parent or ""
        item.dependencies.extend(resource.dependencies or ())
        for key, urns in (getattr(resource, "property_dependencies", None) or {}).items():
            if urns:
                item.propertyDependencies[key].urns.extend(urns)
        provider = _provider(resource, by_urn)
        if provider is not None:
            item.provider.CopyFrom(provider)
    return stack_request


# --- the pack process ------------------------------------------------------------------------


def _drain(fd: int) -> None:
    """Read and discard a pipe until EOF (the pack exited)."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


class PolicyPackProcess:
    """A running policy pack, driven over gRPC; use as a context manager.

    ``config`` is a parsed ``--policy-pack-config`` (see :func:`load_policy_config`); stack,
    project and organization are passed to ``ConfigureStack`` (defaults "dev",
    "ecs-inference", "organization"); ``dry_run`` defaults to True (a preview).
    """

    def __init__(
        self,
        pack_dir: str | os.PathLike[str],
        *,
        python: str = sys.executable,
        config: Mapping[str, Any] | None = None,
        stack: str = "dev",
        project: str = "ecs-inference",
        organization: str = "organization",
        dry_run: bool = True,
        stack_config: Mapping[str, str] | None = None,
        configure_stack: bool = True,
        startup_timeout: float = 60.0,
        rpc_timeout: float = 120.0,
    ) -> None:
        self.pack_dir = Path(pack_dir).resolve()
        self.python = python
        self.config = dict(config) if config else None
        self.stack, self.project, self.organization = stack, project, organization
        self.dry_run = dry_run
        self.stack_config = dict(stack_config or {})
        # `pulumi policy analyze` (AnalyzeSnapshot) loads packs without analyzer options: no
        # ConfigureStack and no PULUMI_STACK/PROJECT/DRY_RUN (plugin.NewPolicyAnalyzer, opts nil).
        self.configure_stack = configure_stack
        self.startup_timeout = startup_timeout
        self.rpc_timeout = rpc_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = None
        self._channel: grpc.Channel | None = None
        self._stub: analyzer_pb2_grpc.AnalyzerStub | None = None
        self._info: dict[str, Any] | None = None
        self._drain: threading.Thread | None = None

    # lifecycle

    def __enter__(self) -> PolicyPackProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the pack, connect, and configure it as the CLI does before any analysis."""
        main = self.pack_dir / "__main__.py"
        if not main.is_file():
            raise PolicyPackError(f"{self.pack_dir}: not a Python policy pack (no __main__.py)")
        env = dict(os.environ)
        if self.configure_stack:
            env.update(
                {
                    "PULUMI_PROJECT": self.project,
                    "PULUMI_STACK": self.stack,
                    "PULUMI_ORGANIZATION": self.organization,
                    "PULUMI_DRY_RUN": "true" if self.dry_run else "false",
                }
            )
        # Lives as long as the process (closed in close()), so no with-block.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._process = subprocess.Popen(
            [self.python, "-u", str(main)],
            cwd=self.pack_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        try:
            port = self._read_port()
            self._channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=_CHANNEL_OPTIONS)
            grpc.channel_ready_future(self._channel).result(timeout=self.startup_timeout)
            self._stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
            self._configure()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Disconnect and stop the pack process (it serves until killed)."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            if self._drain is not None:
                self._drain.join(timeout=5)
                self._drain = None
            if self._process.stdout:
                self._process.stdout.close()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:]

    def _read_port(self) -> int:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        selector = selectors.DefaultSelector()
        selector.register(stdout, selectors.EVENT_READ)
        line = b""
        try:
            while not line.endswith(b"\n"):
                if not selector.select(timeout=self.startup_timeout):
                    raise PolicyPackError(
                        f"policy pack {self.pack_dir} printed no port within "
                        f"{self.startup_timeout:g} s\n{self._stderr_tail()}"
                    )
                chunk = os.read(stdout.fileno(), 1)
                if not chunk:
                    self._process.wait(timeout=10)
                    raise PolicyPackError(
                        f"policy pack {self.pack_dir} exited with code "
                        f"{self._process.returncode} before serving:\n{self._stderr_tail()}"
                    )
                line += chunk
        finally:
            selector.close()
        # Keep draining stdout so a chatty rule cannot block the pack on a full pipe.
        self._drain = threading.Thread(target=_drain, args=(stdout.fileno(),), daemon=True)
        self._drain.start()
        try:
            return int(line.strip())
        except ValueError:
            raise PolicyPackError(
                f"policy pack {self.pack_dir} printed {line!r} instead of a port"
            ) from None

    def _call(self, method: str, request: Any) -> Any:
        assert self._stub is not None, "policy pack not started"
        try:
            return getattr(self._stub, method)(request, timeout=self.rpc_timeout)
        except grpc.RpcError as error:
            raise PolicyPackError(
                f"{method} failed: {error.code().name}: {error.details()}\n{self._stderr_tail()}"
            ) from None

    def _configure(self) -> None:
        request = analyzer_pb2.AnalyzerStackConfigureRequest(
            stack=self.stack,
            project=self.project,
            organization=self.organization,
            dry_run=self.dry_run,
            config=self.stack_config,
        )
        assert self._stub is not None, "policy pack not started"
        try:
            if self.configure_stack:
                self._stub.ConfigureStack(request, timeout=self.rpc_timeout)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise PolicyPackError(f"ConfigureStack failed: {error.details()}") from None
        info = self._fetch_info()
        if not info["supportsConfig"]:
            if self.config:
                raise PolicyPackError(f"policy pack {info['name']!r} does not support config")
            self._info = info
            return
        reconciled = reconcile_config(info["policies"], info["initialConfig"], self.config)
        request = analyzer_pb2.ConfigureAnalyzerRequest()
        for name, entry in reconciled.items():
            level = entry["enforcementLevel"]
            if level not in _LEVEL_TO_PROTO:
                raise PolicyConfigError(f"{name}: invalid enforcement level {level!r}")
            request.policyConfig[name].enforcementLevel = _LEVEL_TO_PROTO[level]
            request.policyConfig[name].properties.update(_plain(entry["properties"]))
        if reconciled:
            try:
                self._stub.Configure(request, timeout=self.rpc_timeout)
            except grpc.RpcError as error:  # the pack refused it: the CLI's wording
                raise PolicyConfigError(
                    f"configuring policy pack {info['name']!r} at {str(self.pack_dir)!r}: "
                    f"{error.details()}"
                ) from None
        for policy in info["policies"]:
            if policy["name"] in reconciled:
                policy["enforcementLevel"] = reconciled[policy["name"]]["enforcementLevel"]
                policy["config"] = reconciled[policy["name"]]["properties"]
        self._info = info

    def _fetch_info(self) -> dict[str, Any]:
        reply = self._call("GetAnalyzerInfo", empty_pb2.Empty())
        version = reply.version
        manifest = self.pack_dir / "PulumiPolicy.yaml"
        if manifest.is_file():
            data = yaml.safe_load(manifest.read_text(encoding="utf-8")) or {}
            version = str(data.get("version") or version)
        policies = []
        for policy in reply.policies:
            schema = json_format.MessageToDict(policy.configSchema)
            policies.append(
                {
                    "name": policy.name,
                    "description": policy.description,
                    "enforcementLevel": _PROTO_TO_LEVEL[policy.enforcementLevel],
                    "configSchema": {
                        "properties": schema.get("properties", {}),
                        "required": schema.get("required", []),
                    },
                    "type": {
                        analyzer_pb2.POLICY_TYPE_RESOURCE: "resource",
                        analyzer_pb2.POLICY_TYPE_STACK: "stack",
                    }.get(policy.policy_type, "unknown"),
                }
            )
        initial = {}
        for name, cfg in reply.initialConfig.items():
            entry = json_format.MessageToDict(cfg.properties)
            # ADVISORY is the proto's zero value, so an unset level reads as advisory here too
            # (the CLI's convertPolicyConfig does the same).
            entry["enforcementLevel"] = _PROTO_TO_LEVEL.get(cfg.enforcementLevel, "advisory")
            initial[name] = entry
        return {
            "name": reply.name,
            "version": version,
            "description": reply.description,
            "supportsConfig": reply.supportsConfig,
            "policies": sorted(policies, key=lambda p: p["name"]),
            "initialConfig": initial,
        }

    # analysis

    def info(self) -> dict[str, Any]:
        """GetAnalyzerInfo: name, version, description, supportsConfig, initialConfig and
        policies (name, description, enforcementLevel after config, configSchema, type, and
        the reconciled ``config``)."""
        assert self._info is not None, "policy pack not started"
        return self._info

    def analyze(self, resources: Iterable[Any], *, outputs: bool = False) -> list[PolicyViolation]:
        """Analyze each resource, then AnalyzeStack; every diagnostic, in the order returned.

        ``resources`` are objects with ``type, name, urn, custom, inputs, parent,
        dependencies, provider`` and optionally ``property_dependencies`` and ``options``
        (registration order). AnalyzeStack gets each one's ``outputs`` when ``outputs`` is
        set, else its ``inputs``.
        """
        resources = list(resources)
        violations: list[PolicyViolation] = []
        for resource, request in zip(resources, analyze_requests(resources), strict=True):
            reply = self._call("Analyze", request)
            # The engine reports resource diagnostics against the analyzed resource's URN.
            violations.extend(self._convert(reply, "resource", resource.urn))
        reply = self._call("AnalyzeStack", analyze_stack_request(resources, outputs=outputs))
        violations.extend(self._convert(reply, "stack", None))
        return violations

    def analyze_view(self, stack: Any) -> list[PolicyViolation]:
        """Analyze a ``tools.views.engine.EngineStack`` as the engine does: Analyze on each
        resource's checked inputs, AnalyzeStack on the outputs. Each violation names the
        stack's view."""
        found = self.analyze(stack.resources, outputs=True)
        return [dataclasses.replace(v, view=stack.view) for v in found]

    @staticmethod
    def _convert(reply: Any, stage: str, urn: str | None) -> list[PolicyViolation]:
        found = []
        for diag in reply.diagnostics:
            level = _PROTO_TO_LEVEL.get(diag.enforcementLevel, "advisory")
            found.append(
                PolicyViolation(
                    policy_name=diag.policyName,
                    description=diag.description,
                    message=diag.message,
                    enforcement_level="mandatory" if level == "remediate" else level,
                    urn=urn or diag.urn or None,
                    stage=stage,
                )
            )
        return found
