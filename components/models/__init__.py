"""Model services with their engines: one feature, one folder.

- `input`: `ModelConfig`, the service's input: its stack-file section (`platform.models.<name>`,
  camelCase keys) and its Python input at once, validated by the same validators either way.
- `decisions`: what the service decides from its input and its pool's instance types (fit,
  tensor parallel size, task size, shared memory, grace period, deregistration delay), pure.
- `service`: the `ModelService` component.

The engines it runs are a registry (`ecs_inference.engines`, one module each).
"""
