"""The authenticated endpoint, one feature: `input` (`EndpointConfig`, the stack file's
`platform.endpoint` and the component's input), `decisions` (idle timeout, listener priorities,
Cognito prefix: pure), `service` (`Endpoint`), `auth` (its Cognito side), `routes` (the two
authenticated listener rules of each service)."""
