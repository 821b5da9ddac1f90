"""Load gateway configs with the pinned LiteLLM's own parser; run by the LiteLLM venv's Python.

stdin: a JSON list of cases, each `{"yaml": <config text>, "env": {name: value}}`. For each case,
with every outbound connection blocked (a config that needs the network to load is a failure):

1. the YAML is parsed as LiteLLM parses it (`yaml.safe_load`) and validated against LiteLLM's
   documented schema of config.yaml (`litellm.proxy._types.ConfigYAML`);
2. each `model_list` entry is validated as a router `Deployment`, and LiteLLM resolves its
   provider (`get_llm_provider`) and, for `hosted_vllm`, the URL it would call;
3. the proxy's own loader (`ProxyConfig.load_config`) loads the file as `litellm --config` does,
   with `env` set, building the real `Router`;
4. with database variables in `env`, LiteLLM's CLI-side URL assembly builds DATABASE_URL from
   them as `litellm.proxy.proxy_cli.run_server` does: with a token-auth toggle on, the writer URL
   of `DatabaseURLSettings`; then, when DATABASE_URL is still unset, the password path's
   `construct_database_url_from_env_vars` (which needs host, username and name).

5. with `requests` (model names) and `standin_port` in a case, an OpenAI-compatible stand-in
   serves on 127.0.0.1 at that port (loopback is the only address connections may reach) and
   the loaded router sends one chat completion per name; the report's `answered` lists, per
   name, the `model` the stand-in received (what the engine behind the route would be asked).

stdout (last line): a JSON list of reports, one per case: `error` (the exception text) or what
LiteLLM understood: model names, provider and URL per deployment, the resolved master key and
key header, router settings, the assembled database URL, the stand-in's answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
from typing import Any

LOOPBACK = ("127.0.0.1", "localhost")


def _blocked(*_args: object, **_kwargs: object) -> None:
    raise OSError("network access blocked: the config must load offline")


def _block_network() -> None:
    """Every connection fails except to the loopback stand-in."""
    connect, connect_ex, resolve = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def loopback_only(original: Any) -> Any:
        def guarded(self: socket.socket, address: Any) -> Any:
            if isinstance(address, tuple) and address and address[0] in LOOPBACK:
                return original(self, address)
            return _blocked()

        return guarded

    def resolve_loopback(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in LOOPBACK:
            return resolve(host, *args, **kwargs)
        return _blocked()

    socket.socket.connect = loopback_only(connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = loopback_only(connect_ex)  # type: ignore[method-assign]
    socket.getaddrinfo = resolve_loopback  # type: ignore[assignment]


def _ask_standin(router: Any, port: int, names: list[str]) -> list[dict[str, Any]]:
    """Serve an OpenAI-compatible stand-in on 127.0.0.1:`port` and send one chat completion per
    model name through `router`; return what the stand-in was asked for each."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    received: list[dict[str, Any]] = []

    class StandIn(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"path": self.path, "model": body.get("model")})
            answer = {
                "id": "chatcmpl-standin",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", port), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    answered = []
    try:
        for name in names:
            before = len(received)
            router.completion(model=name, messages=[{"role": "user", "content": "hi"}])
            asked = received[before:]
            answered.append({"name": name, "received": asked[-1] if asked else None})
    finally:
        server.shutdown()
    return answered


def _load(case: dict[str, Any]) -> dict[str, Any]:
    import yaml
    from litellm import get_llm_provider
    from litellm.llms.hosted_vllm.chat.transformation import HostedVLLMChatConfig
    from litellm.proxy import proxy_server
    from litellm.proxy._types import ConfigYAML
    from litellm.types.router import Deployment

    raw = yaml.safe_load(case["yaml"])
    ConfigYAML.model_validate(raw)
    deployments = []
    for entry in raw.get("model_list") or []:
        Deployment.model_validate(entry)
        params = entry["litellm_params"]
        model, provider, _, _ = get_llm_provider(
            model=params["model"], api_base=params.get("api_base")
        )
        url = None
        if provider == "hosted_vllm":
            url = HostedVLLMChatConfig().get_complete_url(
                api_base=params.get("api_base"),
                api_key=params.get("api_key"),
                model=model,
                optional_params={},
                litellm_params={},
                stream=True,
            )
        deployments.append(
            {"model_name": entry["model_name"], "provider": provider, "model": model, "url": url}
        )

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        handle.write(case["yaml"])
        path = handle.name
    try:
        router, model_list, general = asyncio.run(
            proxy_server.ProxyConfig().load_config(router=None, config_file_path=path)
        )
    finally:
        os.unlink(path)
    loaded = [
        {
            "model_name": m["model_name"],
            "model": m["litellm_params"].get("model"),
            "api_base": m["litellm_params"].get("api_base"),
            "aws_region_name": m["litellm_params"].get("aws_region_name"),
            "timeout": m["litellm_params"].get("timeout"),
        }
        for m in model_list or []
    ]
    database_url = None
    if os.environ.get("DATABASE_HOST"):
        database_url = _cli_database_url()
    answered = None
    if case.get("requests") and router is not None:
        answered = _ask_standin(router, int(case["standin_port"]), list(case["requests"]))
    return {
        "model_names": sorted(router.get_model_names()) if router is not None else [],
        "deployments": deployments,
        "loaded": loaded,
        "master_key": proxy_server.master_key,
        "key_header": general.get("litellm_key_header_name"),
        "routing_strategy": router.routing_strategy if router is not None else None,
        "num_retries": router.num_retries if router is not None else None,
        "database_url": database_url,
        "answered": answered,
    }


def _cli_database_url() -> str | None:
    """DATABASE_URL as the CLI's start-up leaves it (`proxy_cli.run_server`, in its order)."""
    from litellm.proxy.db.db_url_settings import DatabaseURLSettings
    from litellm.proxy.db.token_auth import (
        AZURE_POSTGRESQL_AUTH_ENV_VAR,
        IAM_TOKEN_DB_AUTH_ENV_VAR,
        token_auth_flag_enabled,
    )
    from litellm.proxy.utils import construct_database_url_from_env_vars

    token_auth = any(
        token_auth_flag_enabled(os.getenv(name), env_var=name)
        for name in (IAM_TOKEN_DB_AUTH_ENV_VAR, AZURE_POSTGRESQL_AUTH_ENV_VAR)
    )
    if token_auth:
        DatabaseURLSettings.from_env().apply_writer_url_to_env()
    if os.getenv("DATABASE_URL") is None:
        url = construct_database_url_from_env_vars()
        if url is not None:
            os.environ["DATABASE_URL"] = url
    return os.environ.get("DATABASE_URL")


def main() -> int:
    cases = json.loads(sys.stdin.read())
    _block_network()
    # LiteLLM fetches its model cost map from GitHub at import unless told to use the bundled one.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    reports = []
    for case in cases:
        saved = dict(os.environ)
        os.environ.update(case.get("env", {}))
        try:
            reports.append(_load(case))
        except Exception as exc:  # report, so one bad case does not hide the others
            reports.append({"error": f"{type(exc).__name__}: {exc}"})
        finally:
            os.environ.clear()
            os.environ.update(saved)
    print(json.dumps(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
