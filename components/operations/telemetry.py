"""The accelerator hosts' telemetry (pure): the CloudWatch agent on the pool instances, its
config, the user-data snippet that installs it and the instance role's grant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from ecs_inference.contracts import metrics as m
from ecs_inference.operations.errors import ObservabilityError

CLOUDWATCH_AGENT_VERSION = "1.300062.0b1304"
"""Pinned CloudWatch agent release, installed from AWS's versioned download path (the regional
`amazoncloudwatch-agent-<region>` bucket, reached through the VPC's S3 gateway endpoint)."""
NEURON_MONITOR_PORT = 9010
"""Loopback port of `neuron-monitor-prometheus.py` on Neuron hosts (clear of the task ports,
which live on the tasks' own ENIs in awsvpc mode anyway)."""
HOST_TELEMETRY_INTERVAL_SECONDS = 60


def cloudwatch_agent_config(
    *, stack: str, pool: str, kind: Literal["gpu", "neuron"], log_group: str
) -> dict[str, Any]:
    """The agent's JSON config for one pool's instances.

    GPU: the `nvidia_gpu` plugin (nvidia-smi on the host: utilisation, memory used/total,
    temperature, power), with static Stack/Pool dimensions and a Stack/Pool rollup, published
    with PutMetricData to `contracts.metrics.HOST_NAMESPACE`. Neuron: the agent scrapes
    `neuron-monitor-prometheus.py` on loopback and writes EMF to `log_group` (CloudWatch
    extracts the metrics), keeping the families named in `contracts.metrics`.
    """
    static = {m.DIM_STACK: stack, m.DIM_POOL: pool}
    agent = {
        "metrics_collection_interval": HOST_TELEMETRY_INTERVAL_SECONDS,
        "run_as_user": "cwagent",
    }
    if kind == "gpu":
        return {
            "agent": agent,
            "metrics": {
                "namespace": m.HOST_NAMESPACE,
                "aggregation_dimensions": [[m.DIM_STACK, m.DIM_POOL]],
                "metrics_collected": {
                    "nvidia_gpu": {
                        "measurement": list(m.NVIDIA_MEASUREMENTS),
                        "metrics_collection_interval": HOST_TELEMETRY_INTERVAL_SECONDS,
                        "append_dimensions": static,
                    }
                },
            },
        }

    def declaration(names: Sequence[str], extra: Sequence[str] = ()) -> dict[str, Any]:
        return {
            "source_labels": ["job"],
            "label_matcher": "^neuron-monitor$",
            "dimensions": [[m.DIM_STACK, m.DIM_POOL, *extra]],
            "metric_selectors": [f"^{re.escape(n)}$" for n in names],
        }

    return {
        "agent": agent,
        "logs": {
            "metrics_collected": {
                "prometheus": {
                    "log_group_name": log_group,
                    "prometheus_config_path": PROMETHEUS_CONFIG_PATH,
                    "emf_processor": {
                        "metric_declaration_dedup": True,
                        "metric_namespace": m.HOST_NAMESPACE,
                        # Memory is labelled host / neuron_device: keep the label, or the
                        # rollup would add host and device bytes into one series.
                        "metric_declaration": [
                            declaration([m.NEURON_CORE_UTILIZATION, m.NEURON_EXECUTION_ERRORS]),
                            declaration([m.NEURON_DEVICE_MEMORY_USED], [m.NEURON_MEMORY_LOCATION]),
                        ],
                    },
                }
            }
        },
    }


AGENT_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/ecs-inference.json"
PROMETHEUS_CONFIG_PATH = "/opt/aws/amazon-cloudwatch-agent/etc/ecs-inference-prometheus.yaml"


def neuron_prometheus_config(stack: str, pool: str) -> str:
    """The agent's Prometheus scrape config (YAML is a JSON superset: written as JSON)."""
    doc = {
        "global": {"scrape_interval": "60s", "scrape_timeout": "10s"},
        "scrape_configs": [
            {
                "job_name": "neuron-monitor",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{NEURON_MONITOR_PORT}"],
                        "labels": {m.DIM_STACK: stack, m.DIM_POOL: pool},
                    }
                ],
            }
        ],
    }
    return json.dumps(doc, indent=2)


def host_telemetry_user_data(
    *, stack: str, pool: str, kind: Literal["gpu", "neuron"], region: str, log_group: str
) -> str:
    """Bash appended to the pool's user data: install the pinned agent, write its config, start
    it; on Neuron hosts also run `neuron-monitor | neuron-monitor-prometheus.py` (both from the
    AMI's aws-neuronx-tools) as a systemd unit. Failures are logged, never fatal: telemetry
    must not keep an instance from joining the cluster."""
    config = json.dumps(
        cloudwatch_agent_config(stack=stack, pool=pool, kind=kind, log_group=log_group), indent=2
    )
    url = (
        f"https://amazoncloudwatch-agent-{region}.s3.{region}.amazonaws.com/amazon_linux/amd64/"
        f"{CLOUDWATCH_AGENT_VERSION}/amazon-cloudwatch-agent.rpm"
    )
    lines = [
        "# --- host telemetry (ecs-inference components/operations/telemetry.py) ---",
        "install_telemetry() {",
        "  set -u",
        f"  local rpm=/tmp/amazon-cloudwatch-agent-{CLOUDWATCH_AGENT_VERSION}.rpm",
        f"  curl --fail --silent --show-error --retry 5 --output \"$rpm\" '{url}' || return 1",
        '  rpm -U --replacepkgs "$rpm" || return 1',
        f"  cat > '{AGENT_CONFIG_PATH}' <<'ECS_INFERENCE_AGENT'",
        config,
        "ECS_INFERENCE_AGENT",
    ]
    if kind == "neuron":
        lines += [
            f"  cat > '{PROMETHEUS_CONFIG_PATH}' <<'ECS_INFERENCE_PROM'",
            neuron_prometheus_config(stack, pool),
            "ECS_INFERENCE_PROM",
            "  cat > /etc/systemd/system/neuron-monitor-prometheus.service <<'ECS_INFERENCE_UNIT'",
            "[Unit]",
            "Description=neuron-monitor metrics on loopback for the CloudWatch agent",
            "After=network-online.target",
            "[Service]",
            "ExecStart=/bin/sh -c '/opt/aws/neuron/bin/neuron-monitor | "
            "/opt/aws/neuron/bin/neuron-monitor-prometheus.py --port "
            f"{NEURON_MONITOR_PORT}'",
            "Restart=always",
            "RestartSec=10",
            "DynamicUser=yes",
            "[Install]",
            "WantedBy=multi-user.target",
            "ECS_INFERENCE_UNIT",
            "  systemctl daemon-reload",
            "  systemctl enable --now neuron-monitor-prometheus.service || return 1",
        ]
    lines += [
        "  /opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl -a fetch-config "
        f"-m ec2 -s -c 'file:{AGENT_CONFIG_PATH}'",
        "}",
        "install_telemetry || echo 'ecs-inference: host telemetry not installed; the instance "
        "serves without it' >&2",
    ]
    return "\n".join(lines) + "\n"


def host_telemetry_policy(
    *, kind: Literal["gpu", "neuron"], log_group_arn: str | None = None
) -> dict[str, Any]:
    """Instance-role statements for the agent: PutMetricData only into the host namespace
    (GPU), or only the EMF log group's streams (Neuron). Nothing else: the config is in user
    data (no SSM read), dimensions are static (no ec2:DescribeTags)."""
    if kind == "gpu":
        return {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublishHostMetrics",
                    "Effect": "Allow",
                    "Action": "cloudwatch:PutMetricData",
                    # PutMetricData has no resource-level permissions; the namespace condition
                    # is the only scope it supports.
                    "Resource": "*",
                    "Condition": {"StringEquals": {"cloudwatch:namespace": m.HOST_NAMESPACE}},
                }
            ],
        }
    if not log_group_arn:
        raise ObservabilityError("Neuron host telemetry needs the EMF log group's ARN")
    group = log_group_arn.removesuffix(":*")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WriteHostEmf",
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                "Resource": [group, f"{group}:log-stream:*"],
            }
        ],
    }
