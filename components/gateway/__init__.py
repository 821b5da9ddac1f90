"""The AI gateway (LiteLLM's proxy on Fargate) and its optional database: one feature, one folder.

- `input`: `GatewayConfig`, the gateway's input: its stack-file section (`platform.gateway`,
  camelCase keys) and its Python input at once, validated by the same validators either way.
- `decisions`: what the gateway decides from its input and the services it may reach (routes,
  Bedrock models, size, keys, decision lines), pure.
- `litellm_config`: the generated LiteLLM config, the container's variables and the IAM
  documents, pure.
- `service`: the `LiteLLMGateway` component; `database`: the `GatewayDatabase` component.
"""
