"""The CloudWatch agent's contract: the table names the release the pools install, the pools'
user data passes it, and a misspelt measurement or command fails the preview."""

from __future__ import annotations

import base64
import dataclasses

from ecs_inference.contracts import metrics
from ecs_inference.operations import telemetry
from tools.preview import run_preview
from tools.recording import ACCOUNT_ID
from tools.rehearsal import rehearse
from tools.rehearsal.agent import command_problems, config_problems, table


def test_the_table_is_the_release_the_pools_install() -> None:
    assert telemetry.CLOUDWATCH_AGENT_VERSION.startswith(table()["tag"].removeprefix("v") + "b")


def test_what_the_stacks_configure_is_what_the_agent_reads() -> None:
    gpu = {"nvidia_gpu": {"measurement": list(metrics.NVIDIA_MEASUREMENTS)}}
    assert not list(config_problems({"metrics": {"metrics_collected": gpu}}))
    typo = {"nvidia_gpu": {"measurement": ["utilization_gpu", "gpu_temperature"]}}
    assert list(config_problems({"metrics": {"metrics_collected": typo}}))
    words = ["/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"]
    assert not list(command_problems([*words, "-a", "fetch-config", "-m", "ec2", "-s", "-c", "x"]))
    assert list(command_problems([*words, "-a", "fetch", "-m", "ec2"]))
    assert list(command_problems([*words, "-a", "fetch-config", "-r"]))


def test_a_misspelt_measurement_fails_the_preview() -> None:
    prod = run_preview("prod", policy_pack=None)
    assert prod.ok, prod.error
    resources = []
    for r in prod.resources:
        if r.type == "aws:ec2/launchTemplate:LaunchTemplate" and r.name == "inference-l40s-4x-lt":
            text = base64.b64decode(r.inputs["userData"]).decode()
            assert '"utilization_gpu"' in text
            text = text.replace('"utilization_gpu"', '"utilisation_gpu"')
            user_data = base64.b64encode(text.encode()).decode()
            r = dataclasses.replace(r, inputs={**r.inputs, "userData": user_data})
        resources.append(r)
    (finding,) = rehearse(resources, "us-east-1", ACCOUNT_ID).findings
    assert "CloudWatch agent" in finding.message
    assert (
        "nvidia_gpu measurement 'utilisation_gpu' is not one the agent collects" in finding.message
    )
