"""The user data of a pool's instances (pure): the ECS agent's settings and the warm-pool
image pre-pull.

The ECS-optimized AMI starts the agent after cloud-init has run the user data, so
/etc/ecs/ecs.config is complete before the agent reads it. ECS warm-pool instances run their
initialisation and then stop, and the agent does not register while an instance sits in the
pool (`ECS_WARM_POOLS_CHECK`), so pre-pulling images happens here, during that initialisation.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence

from ecs_inference.pools.ami_contents import AWS_CLI_PACKAGE
from ecs_inference.pools.spot import SPOT_AGENT_SETTINGS
from ecs_inference.sizing.catalog import Accelerator

# ECS cluster names (CreateCluster API).
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")


def ecs_agent_settings(
    cluster_name: str,
    *,
    accelerator: Accelerator,
    warm_pool: bool,
    container_stop_timeout_seconds: int = 120,
    image_minimum_cleanup_age_hours: int = 24,
    image_pull_behavior: str = "prefer-cached",
    spot: bool = False,
) -> dict[str, str]:
    """The /etc/ecs/ecs.config entries of a pool's instances, in file order.

    Defaults: stop timeout 120 s, images kept at least 24 h after their pull, pull behaviour
    prefer-cached (the plan chooses `default` for a pool that runs a mutable tag), no Spot.
    """
    if not _CLUSTER_NAME.fullmatch(cluster_name):
        # Also keeps the value from breaking out of the heredoc in `ecs_user_data`.
        raise ValueError(
            f"ECS cluster name {cluster_name!r} must be 1-255 letters, digits, '_' or '-'"
        )
    settings: dict[str, str] = {"ECS_CLUSTER": cluster_name}
    if accelerator == "nvidia":
        # Advertises the GPUs as the GPU resource, so tasks can reserve them and the agent passes
        # NVIDIA_VISIBLE_DEVICES for exactly the reserved ones.
        settings["ECS_ENABLE_GPU_SUPPORT"] = "true"
    # Neuron devices are not an ECS resource type: tasks map /dev/neuronN through
    # linuxParameters.devices, which needs no agent setting (the Neuron AMI loads the driver).
    settings.update(
        {
            # prefer-cached: a multi-GB CUDA/Neuron image already on the volume is reused
            # instead of pulled again on every task start; safe only for digest references.
            "ECS_IMAGE_PULL_BEHAVIOR": image_pull_behavior,
            # Unused images stay at least this long, so a crashed task, a scale-in/out on the
            # same host or a circuit-breaker rollback finds its image on disk. Cleanup stays on
            # so months of deploys cannot fill the root volume.
            "ECS_IMAGE_MINIMUM_CLEANUP_AGE": f"{image_minimum_cleanup_age_hours}h",
            "ECS_IMAGE_CLEANUP_INTERVAL": "1h",
            # Default SIGTERM-to-SIGKILL grace for containers without their own stopTimeout:
            # an in-flight generation gets time to finish after the ALB has drained the target.
            "ECS_CONTAINER_STOP_TIMEOUT": f"{container_stop_timeout_seconds}s",
            # Task roles through the agent's credential endpoint (169.254.170.2)...
            "ECS_ENABLE_TASK_IAM_ROLE": "true",
            # ...and never the instance role. The IMDS hop limit covers bridge-mode containers;
            # for awsvpc tasks (their own network namespace and ENI) AWS's documented control is
            # this agent setting (ECS developer guide, container instance security).
            "ECS_AWSVPC_BLOCK_IMDS": "true",
            "ECS_AVAILABLE_LOGGING_DRIVERS": json.dumps(
                ["json-file", "awslogs"], separators=(",", ":")
            ),
        }
    )
    # Images the warm-pool initialisation pre-pulled with `docker pull` are untracked by the
    # agent; its untracked-image cleanup (agent config DeleteNonECSImagesEnabled) defaults to
    # false, stated here so the pre-pulled images stay until a task uses (and tracks) them.
    settings["ECS_ENABLE_UNTRACKED_IMAGE_CLEANUP"] = "false"
    if warm_pool:
        # Without it an instance registers with the cluster while parked in the warm pool and
        # ECS places tasks on a host that is about to stop (agent >= 1.59.0).
        settings["ECS_WARM_POOLS_CHECK"] = "true"
    if spot:
        # Off by default: without it a reclaimed Spot host keeps its tasks (and ALB targets)
        # until EC2 stops it, two minutes after the interruption notice.
        settings.update(SPOT_AGENT_SETTINGS)
    return settings


def ecs_user_data(
    settings: Mapping[str, str], *, prepull_images: Sequence[str] = (), region: str | None = None
) -> str:
    """The instance user data (a shell script) that writes `settings` (`ecs_agent_settings`) to
    /etc/ecs/ecs.config.

    The ECS-optimized AMI starts the agent after cloud-init has run the user data, so the file
    is complete before the agent reads it.

    With a warm pool and `prepull_images` (default none; `region` then required), an instance
    installs the AWS CLI when the AMI lacks it; one initialising INTO the warm pool (IMDS target
    lifecycle state `Warmed:*`) logs in to each ECR registry with the instance role and
    `docker pull`s every image, then completes the `PREPULL_HOOK` launch lifecycle action, after
    which the group stops it; an instance launching straight into service completes the action
    at once and its agent pulls as usual.
    """
    body = "\n".join(f"{key}={value}" for key, value in settings.items())
    script = (
        "#!/bin/bash\n"
        "set -euo pipefail\n"
        "mkdir -p /etc/ecs\n"
        "cat <<'EOF' >> /etc/ecs/ecs.config\n"
        f"{body}\n"
        "EOF\n"
    )
    if settings.get("ECS_WARM_POOLS_CHECK") == "true" and prepull_images:
        if region is None or not _REGION.fullmatch(region):
            raise ValueError(f"pre-pulling images needs the stack's region, got {region!r}")
        script += prepull_script(prepull_images, region)
    return script


# Name of the launch lifecycle hook that holds a warm-pool instance until its images are pulled.
PREPULL_HOOK = "prepull-images"
# How long the group waits for the hook before it continues anyway (a stuck pull must not keep
# the instance out of the warm pool forever): a 20 GB image at 100 MiB/s takes under 4 minutes.
PREPULL_HOOK_TIMEOUT_SECONDS = 1800
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_IMAGE_REFERENCE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$")


PREPULL_UNIT = "ecs-inference-prepull.service"
"""The systemd unit that runs the pre-pull script and completes `PREPULL_HOOK` on every boot."""


def prepull_script(images: Sequence[str], region: str) -> str:
    """The user-data tail of `ecs_user_data` that pre-pulls `images` on warm-pool initialisation
    and completes `PREPULL_HOOK` on every launch transition.

    A launch hook pauses an instance both entering the warm pool (`Warmed:Pending:Wait`) and
    leaving it (`Pending:Wait`), but cloud-init runs user data on the first boot only. So the
    script is an enabled systemd unit, started on every boot (`--now --no-block`: this boot too,
    without holding up cloud-init, docker or the agent): entering the pool it pulls, then
    completes; started from a Stopped pool (a later boot, target state InService) it completes
    at once; in a Running pool it stays up after entering and completes again when the target
    state turns InService, since that instance does not boot again. IMDSv2 only (hop limit 1
    allows the host itself)."""
    bad = [i for i in images if not _IMAGE_REFERENCE.fullmatch(i)]
    if bad:
        raise ValueError(f"image references {bad!r} cannot be pre-pulled safely")
    registries = sorted({i.split("/", 1)[0] for i in images if ".dkr.ecr." in i.split("/", 1)[0]})
    logins = "".join(
        f"  aws ecr get-login-password --region {region} | docker login --username AWS "
        f"--password-stdin {r}\n"
        for r in registries
    )
    pulls = "".join(f"  docker pull {i}\n" for i in sorted(set(images)))
    return (
        "cat <<'PREPULL' > /usr/local/sbin/ecs-inference-prepull\n"
        "#!/bin/bash\n"
        "set -uo pipefail\n"
        # The AL2023 ECS AMIs' build installs no AWS CLI (pools.ami_contents): install it from
        # the AL2023 repository (S3, through the S3 gateway endpoint or NAT) when it is missing.
        "for attempt in 1 2 3 4 5; do\n"
        "  command -v aws >/dev/null 2>&1 && break\n"
        f"  dnf install -y -q {AWS_CLI_PACKAGE} || sleep 10\n"
        "done\n"
        "imds() {\n"
        "  local token\n"
        '  token=$(curl -fsS -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" '
        "http://169.254.169.254/latest/api/token) &&\n"
        '    curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/$1"\n'
        "}\n"
        "target() { imds meta-data/autoscaling/target-lifecycle-state || echo unknown; }\n"
        "complete_hook() {\n"
        f"  aws autoscaling complete-lifecycle-action --region {region} "
        f'--lifecycle-hook-name {PREPULL_HOOK} --auto-scaling-group-name "$group" '
        '--instance-id "$instance" --lifecycle-action-result CONTINUE\n'
        "}\n"
        "state=$(target)\n"
        "instance=$(imds meta-data/instance-id)\n"
        'if [[ "$state" == Warmed:* ]]; then\n'
        "  until docker info >/dev/null 2>&1; do sleep 5; done\n"
        f"{logins}{pulls}"
        "fi\n"
        f"group=$(aws autoscaling describe-auto-scaling-instances --region {region} "
        '--instance-ids "$instance" --query "AutoScalingInstances[0].AutoScalingGroupName" '
        "--output text)\n"
        "complete_hook\n"
        'if [[ "$state" == Warmed:Running ]]; then\n'
        '  until [[ "$(target)" == InService ]]; do sleep 5; done\n'
        "  complete_hook\n"
        "fi\n"
        "PREPULL\n"
        "chmod 0755 /usr/local/sbin/ecs-inference-prepull\n"
        f"cat <<'UNIT' > /etc/systemd/system/{PREPULL_UNIT}\n"
        "[Unit]\n"
        "Description=ecs-inference: pre-pull images into the warm pool, complete the launch hook\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        "[Service]\n"
        "Type=oneshot\n"
        "ExecStart=/usr/local/sbin/ecs-inference-prepull\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
        "UNIT\n"
        "systemctl daemon-reload\n"
        f"systemctl enable --now --no-block {PREPULL_UNIT}\n"
    )


def encode_user_data(script: str) -> str:
    """Base64 of `script`, as EC2 launch templates require."""
    return base64.b64encode(script.encode()).decode()
