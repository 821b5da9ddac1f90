"""Day-2 operations as pure specs, one module per subject: `scaling` (engine-load target
tracking), `alarms` (the paging alarms: one table of rows, one builder), `table`
(`stack_alarms`, the one table of who gets which), `watch` (`OperationsSpec`: what a stack's
operations cover; its alarms and dashboard with placeholders), `notifications` (the rollback
rule, subscriptions), `dashboard`, `telemetry` (the accelerator hosts' agent) and `sidecar` (the
metrics sidecar's container).

No Pulumi import. Every builder returns plain data in the shape of the AWS API request it
becomes (PascalCase members, as botocore's models spell them), so the tests validate them
against botocore and the components only map them onto resources. Names and values the engine
side publishes come from `contracts.metrics`. The package re-exports every module's public
names.
"""

from ecs_inference.specs.operations.alarms import (
    ALARM_EVALUATION_MAX_SECONDS,
    ALARM_NAME_MAX,
    AlarmSettings,
    AlarmSpec,
    alarm_metric_count,
    alarm_name,
    alarm_table,
    gateway_alarms,
    isfinite_number,
    pool_alarms,
    queue_age_threshold_seconds,
    service_alarms,
    worker_alarms,
)
from ecs_inference.specs.operations.dashboard import (
    DASHBOARD_BODY_MAX_BYTES,
    DASHBOARD_NAME,
    DASHBOARD_WIDGETS_MAX,
    DashboardInputs,
    GatewayPanel,
    ModelPanel,
    RerankerPanel,
    WorkerPanel,
    dashboard_body,
    dashboard_name,
)
from ecs_inference.specs.operations.errors import (
    ObservabilityError,
)
from ecs_inference.specs.operations.notifications import (
    RULE_NAME,
    SNS_PROTOCOLS,
    Subscription,
    check_subscriptions,
    deployment_rollback_rule,
)
from ecs_inference.specs.operations.scaling import (
    COOLDOWN_MAX_SECONDS,
    SCALING_METRICS,
    TT_SCALE_IN_MINUTES,
    TT_SCALE_OUT_MINUTES,
    ScalingMetric,
    ScalingPolicySpec,
    engine_load_queries,
    engine_scaling_policy,
    kv_cache_queries,
    scaling_cooldowns,
    scaling_decisions,
    service_metric,
    target_tracking_args,
)
from ecs_inference.specs.operations.sidecar import (
    SIDECAR_USER,
    metrics_sidecar_container,
)
from ecs_inference.specs.operations.table import (
    GatewaySubject,
    ServiceSubject,
    WorkerSubject,
    stack_alarms,
)
from ecs_inference.specs.operations.telemetry import (
    AGENT_CONFIG_PATH,
    CLOUDWATCH_AGENT_VERSION,
    HOST_TELEMETRY_INTERVAL_SECONDS,
    NEURON_MONITOR_PORT,
    PROMETHEUS_CONFIG_PATH,
    cloudwatch_agent_config,
    host_telemetry_policy,
    host_telemetry_user_data,
    neuron_prometheus_config,
)
from ecs_inference.specs.operations.watch import (
    OperationsSpec,
    WatchedService,
    dashboard_inputs,
    operations_alarms,
    operations_problems,
)

__all__ = [
    "AGENT_CONFIG_PATH",
    "ALARM_EVALUATION_MAX_SECONDS",
    "ALARM_NAME_MAX",
    "CLOUDWATCH_AGENT_VERSION",
    "COOLDOWN_MAX_SECONDS",
    "DASHBOARD_BODY_MAX_BYTES",
    "DASHBOARD_NAME",
    "DASHBOARD_WIDGETS_MAX",
    "HOST_TELEMETRY_INTERVAL_SECONDS",
    "NEURON_MONITOR_PORT",
    "PROMETHEUS_CONFIG_PATH",
    "RULE_NAME",
    "SCALING_METRICS",
    "SIDECAR_USER",
    "SNS_PROTOCOLS",
    "TT_SCALE_IN_MINUTES",
    "TT_SCALE_OUT_MINUTES",
    "AlarmSettings",
    "AlarmSpec",
    "DashboardInputs",
    "GatewayPanel",
    "GatewaySubject",
    "ModelPanel",
    "ObservabilityError",
    "OperationsSpec",
    "RerankerPanel",
    "ScalingMetric",
    "ScalingPolicySpec",
    "ServiceSubject",
    "Subscription",
    "WatchedService",
    "WorkerPanel",
    "WorkerSubject",
    "alarm_metric_count",
    "alarm_name",
    "alarm_table",
    "check_subscriptions",
    "cloudwatch_agent_config",
    "dashboard_body",
    "dashboard_inputs",
    "dashboard_name",
    "deployment_rollback_rule",
    "engine_load_queries",
    "engine_scaling_policy",
    "gateway_alarms",
    "host_telemetry_policy",
    "host_telemetry_user_data",
    "isfinite_number",
    "kv_cache_queries",
    "metrics_sidecar_container",
    "neuron_prometheus_config",
    "operations_alarms",
    "operations_problems",
    "pool_alarms",
    "queue_age_threshold_seconds",
    "scaling_cooldowns",
    "scaling_decisions",
    "service_alarms",
    "service_metric",
    "stack_alarms",
    "target_tracking_args",
    "worker_alarms",
]
