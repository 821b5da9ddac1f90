"""The authenticated endpoint: one feature, one folder.

- `input`: `EndpointConfig` (with `AuthConfig`), the endpoint's input: its stack-file section
  (`platform.endpoint`) and its Python input at once, validated by the same validators.
- `decisions`: its idle timeout from the routed services, the default Cognito domain prefix and
  a stack's listener rule priorities, pure.
- `service`: the `Endpoint` component (ALB, listeners, certificate, access logs); `auth` its
  Cognito side, `routes` the two authenticated listener rules of each service.
"""
