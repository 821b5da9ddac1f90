"""Day-2 operations: one feature, one folder.

- `input`: `OperationsConfig`, the operations' input: the stack file's `operations` section
  (thresholds, recipients, switches) and its Python input at once.
- `watch`: what the alarms and the dashboard cover (`Watch`), and the placeholders of the
  deploy-time names they read.
- `alarms`: the paging alarms, one table of rows (`ALARMS`) and one builder, per kind of
  subject; `dashboard`: the stack's dashboard body; `rollback`: the circuit-breaker rollback
  rule; all pure, in the shape of the AWS API requests (checked against botocore).
- `decisions`: what the stack's operations decide (the watch, every alarm, what CloudWatch
  would refuse, the decision lines), pure.
- `scaling` (engine-load target tracking), `sidecar` (the metrics sidecar's container) and
  `telemetry` (the accelerator hosts' CloudWatch agent): what the services and pools take from
  operations, pure.
- `component`: the `Operations` component.
"""
