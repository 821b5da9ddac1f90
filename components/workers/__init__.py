"""Queue workers: one feature, one folder.

- `input`: `WorkerConfig`, the worker's input: its stack-file section (`platform.workers.<name>`,
  camelCase keys) and its Python input at once, validated by the same validators either way.
- `decisions`: what a worker decides from its input and the gateway's keys (visibility timeout,
  backlog target, Fargate size, the key it calls the gateway with), pure.
- `queues`: its queues' names and attributes, pure.
- `scaling`: its scaling policies (target tracking on backlog per task, steps from and to zero)
  as API requests, and what they do with a backlog, pure.
- `service`: the `QueueWorker` component.
"""
