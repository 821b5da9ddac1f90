"""The AWS limits this policy pack checks against: the pack's own copy.

The pack ships and runs alone (`pulumi preview --policy-pack policy`), so it cannot import the
program's `contracts/aws_limits.py`. Every name here also exists there with the same value, and
`tests/contracts/test_policy_limits.py` fails when the two copies disagree.
"""

from __future__ import annotations

# ALB attribute idle_timeout.timeout_seconds: 1-4000 s, 60 s when a stack leaves it unset.
ALB_IDLE_TIMEOUT_RANGE = (1, 4000)
ALB_IDLE_TIMEOUT_DEFAULT = 60
# Target group attribute deregistration_delay.timeout_seconds: 0-3600 s.
TARGET_GROUP_DEREGISTRATION_DELAY_MAX = 3600
# Container stopTimeout on Fargate: at most 120 s (RegisterTaskDefinition, ContainerDefinition).
FARGATE_STOP_TIMEOUT_MAX = 120
# Task sizes at or above this many CPU units need Fargate Linux platform version 1.4.0 or later.
FARGATE_PLATFORM_1_4_MIN_CPU = 8192


def _gib_steps(start_gib: int, stop_gib: int, step_gib: int) -> tuple[int, ...]:
    return tuple(g * 1024 for g in range(start_gib, stop_gib + 1, step_gib))


# Linux Fargate task sizes: CPU units -> the memory values (MiB) RegisterTaskDefinition accepts.
FARGATE_TASK_SIZES: dict[int, tuple[int, ...]] = {
    256: (512, 1024, 2048),
    512: _gib_steps(1, 4, 1),
    1024: _gib_steps(2, 8, 1),
    2048: _gib_steps(4, 16, 1),
    4096: _gib_steps(8, 30, 1),
    8192: _gib_steps(16, 60, 4),
    16384: _gib_steps(32, 120, 8),
    32768: (60 * 1024, 120 * 1024, 244 * 1024),
}

# What Fargate refuses in a task definition: RegisterTaskDefinition with FARGATE compatibility
# fails, and a Fargate launch of a task definition that carries it never runs. Keys are paths into
# a RegisterTaskDefinition request (`[]`: every item of a list). Each value is (what Fargate accepts
# there, sources). What it accepts: () when the parameter must be unset (absent, null, false or
# empty), else the accepted values (case-insensitive, every item of a list; a capability may carry
# the `CAP_` prefix), or an inclusive (low, high) integer range. Sources: `guide` is the ECS
# developer guide page "Amazon ECS task definition differences for Fargate"; `botocore:S.m` the
# documentation of member m of shape S in botocore's ECS model (tests/contracts check that every
# such sentence there is cited here or explained).
FARGATE_TASK_PARAMETERS: dict[str, tuple[tuple[str, ...] | tuple[int, int], tuple[str, ...]]] = {
    "ipcMode": (
        (),
        (
            "guide",
            "botocore:RegisterTaskDefinitionRequest.ipcMode",
            "botocore:TaskDefinition.ipcMode",
        ),
    ),
    "pidMode": (
        ("task",),
        ("botocore:RegisterTaskDefinitionRequest.pidMode", "botocore:TaskDefinition.pidMode"),
    ),
    "networkMode": (
        ("awsvpc",),
        (
            "guide",
            "botocore:RegisterTaskDefinitionRequest.networkMode",
            "botocore:TaskDefinition.networkMode",
        ),
    ),
    "placementConstraints": ((), ("guide", "botocore:TaskDefinition.placementConstraints")),
    # Elastic Inference attaches to EC2 container instances only.
    "inferenceAccelerators": ((), ("botocore:InferenceAccelerator",)),
    "volumes[].dockerVolumeConfiguration": (
        (),
        ("guide", "botocore:Volume.dockerVolumeConfiguration"),
    ),
    "volumes[].host.sourcePath": (
        (),
        ("botocore:HostVolumeProperties.sourcePath", "botocore:TaskDefinition.volumes"),
    ),
    "containerDefinitions[].disableNetworking": ((), ("guide",)),
    "containerDefinitions[].dnsSearchDomains": ((), ("guide",)),
    "containerDefinitions[].dnsServers": ((), ("guide",)),
    "containerDefinitions[].dockerSecurityOptions": (
        (),
        ("guide", "botocore:ContainerDefinition.dockerSecurityOptions"),
    ),
    "containerDefinitions[].extraHosts": ((), ("guide", "botocore:ContainerDefinition.extraHosts")),
    # Fargate tasks use awsvpc, which takes no hostname.
    "containerDefinitions[].hostname": ((), ("botocore:ContainerDefinition.hostname",)),
    "containerDefinitions[].links": ((), ("guide", "botocore:ContainerDefinition.links")),
    "containerDefinitions[].privileged": ((), ("guide", "botocore:ContainerDefinition.privileged")),
    # GPU, InferenceAccelerator and NeuronDevice, all the ECS resource types: none on Fargate.
    "containerDefinitions[].resourceRequirements": (
        (),
        ("guide", "botocore:ResourceRequirement.type"),
    ),
    "containerDefinitions[].linuxParameters.devices": (
        (),
        ("guide", "botocore:LinuxParameters.devices"),
    ),
    "containerDefinitions[].linuxParameters.sharedMemorySize": (
        (),
        ("guide", "botocore:LinuxParameters.sharedMemorySize"),
    ),
    "containerDefinitions[].linuxParameters.tmpfs": ((), ("guide",)),
    "containerDefinitions[].linuxParameters.maxSwap": (
        (),
        ("guide", "botocore:LinuxParameters.maxSwap"),
    ),
    "containerDefinitions[].linuxParameters.swappiness": (
        (),
        ("guide", "botocore:LinuxParameters.swappiness"),
    ),
    "containerDefinitions[].linuxParameters.capabilities.add[]": (
        ("SYS_PTRACE",),
        ("guide", "botocore:KernelCapabilities.add"),
    ),
    "containerDefinitions[].logConfiguration.logDriver": (
        ("awslogs", "splunk", "awsfirelens"),
        ("botocore:LogConfiguration.logDriver",),
    ),
    "containerDefinitions[].firelensConfiguration.options.config-file-type": (
        ("file",),
        ("botocore:FirelensConfiguration.options",),
    ),
    "containerDefinitions[].startTimeout": (
        (2, FARGATE_STOP_TIMEOUT_MAX),
        ("botocore:ContainerDefinition.startTimeout",),
    ),
    "containerDefinitions[].stopTimeout": (
        (2, FARGATE_STOP_TIMEOUT_MAX),
        ("botocore:ContainerDefinition.stopTimeout",),
    ),
}
# The value ECS assumes for a parameter of that table the task definition leaves unset.
FARGATE_TASK_PARAMETER_DEFAULTS: dict[str, str] = {"networkMode": "bridge"}
# The same for AWS Batch job definitions with platformCapabilities FARGATE (paths into a
# RegisterJobDefinitionRequest; `botocore:batch:S.m` cites botocore's Batch model; Batch's own
# resourceRequirements types VCPU and MEMORY stay valid, GPU does not).
BATCH_FARGATE_JOB_PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "nodeProperties": (
        (),
        (
            "botocore:batch:RegisterJobDefinitionRequest.nodeProperties",
            "botocore:batch:RegisterJobDefinitionRequest.containerProperties",
            "botocore:batch:NodeRangeProperty.instanceTypes",
        ),
    ),
    "type": (
        ("container",),
        ("botocore:batch:RegisterJobDefinitionRequest.type", "botocore:batch:JobDefinition.type"),
    ),
    "containerProperties.privileged": ((), ("botocore:batch:ContainerProperties.privileged",)),
    "containerProperties.ulimits": ((), ("botocore:batch:ContainerProperties.ulimits",)),
    "containerProperties.vcpus": ((), ("botocore:batch:ContainerProperties.vcpus",)),
    "containerProperties.memory": ((), ("botocore:batch:ContainerProperties.memory",)),
    "containerProperties.instanceType": ((), ("botocore:batch:ContainerProperties.instanceType",)),
    "containerProperties.resourceRequirements[].type": (
        ("VCPU", "MEMORY"),
        ("botocore:batch:ResourceRequirement.value",),
    ),
    "containerProperties.volumes[].host": (
        (),
        ("botocore:batch:Volume.host", "botocore:batch:Host.sourcePath"),
    ),
    "containerProperties.linuxParameters.devices": (
        (),
        ("botocore:batch:LinuxParameters.devices",),
    ),
    "containerProperties.linuxParameters.sharedMemorySize": (
        (),
        ("botocore:batch:LinuxParameters.sharedMemorySize",),
    ),
    "containerProperties.linuxParameters.tmpfs": ((), ("botocore:batch:LinuxParameters.tmpfs",)),
    "containerProperties.linuxParameters.maxSwap": (
        (),
        ("botocore:batch:LinuxParameters.maxSwap",),
    ),
    "containerProperties.linuxParameters.swappiness": (
        (),
        ("botocore:batch:LinuxParameters.swappiness",),
    ),
    "ecsProperties.taskProperties[].ipcMode": ((), ("botocore:batch:EcsTaskProperties.ipcMode",)),
    "ecsProperties.taskProperties[].containers[].privileged": (
        (),
        ("botocore:batch:TaskContainerProperties.privileged",),
    ),
    "ecsProperties.taskProperties[].containers[].resourceRequirements[].type": (
        ("VCPU", "MEMORY"),
        ("botocore:batch:ResourceRequirement.value",),
    ),
    "ecsProperties.taskProperties[].containers[].linuxParameters.devices": (
        (),
        ("botocore:batch:LinuxParameters.devices",),
    ),
    "ecsProperties.taskProperties[].containers[].linuxParameters.sharedMemorySize": (
        (),
        ("botocore:batch:LinuxParameters.sharedMemorySize",),
    ),
}
