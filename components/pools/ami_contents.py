"""What the ECS-optimized Amazon Linux 2023 GPU and Neuron AMIs contain, as their build makes
them: the programs a pool's user data may run without installing anything.

Source: github.com/aws/amazon-ecs-ami at `SOURCE_COMMIT` (2026-08-21, release `ami_version_al2023`
20260820), read from `SOURCE_FILES`. The build (`al2023.pkr.hcl`, one build for `al2023gpu` and
`al2023neu`) starts from the *minimal* AL2023 image (`source_ami_al2023` in
`release-al2023.auto.pkrvars.hcl`) and installs, in order: `packages_al2023` (variables.pkr.hcl),
docker/containerd/runc (scripts/install-docker.sh), ecs-init (scripts/install-ecs-init.sh), the
SSM agent binaries for ECS Exec (scripts/install-exec-dependencies.sh, from a tarball), then the
Neuron packages (scripts/enable-ecs-agent-inferentia-support.sh) or the NVIDIA driver, container
toolkit and DCGM (scripts/al2023/gpu/install-nvidia-driver.sh, install-dcgm.sh). No step
installs `awscli-2`, and the minimal source image's package set is not part of this source, so
the table does not count `aws` as present. (The GPU driver script runs `aws s3` on the build host
in most regions, which suggests a CLI there; the Neuron build runs none.) The user data installs
`awscli-2` itself when `aws` is missing, which is right whichever is true.

`BASE_PROGRAMS` are the commands the build's own provisioners run on the minimal source image
before they install anything, so the image has them. The user data installs what it needs beyond
`programs` from the AL2023 repositories (`BOOT_PACKAGES`): the instance reaches them through the
stack's S3 gateway endpoint (they are S3 buckets, `al2023-repos-<region>-*`; the endpoint carries
no policy) or its NAT gateway. `tools/rehearsal/programs.py` checks every program a pool's user
data runs against this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecs_inference.sizing.catalog import (
    ECS_GPU_AMI_SSM_PARAMETER,
    ECS_NEURON_AMI_SSM_PARAMETER,
    Accelerator,
)

SOURCE_REPOSITORY = "aws/amazon-ecs-ami"
SOURCE_COMMIT = "a2532d3503f2052a09ac18189b0de33918406db8"
SOURCE_FILES = (
    "al2023.pkr.hcl",
    "al2023gpu.pkr.hcl",
    "al2023neu.pkr.hcl",
    "variables.pkr.hcl",
    "release-al2023.auto.pkrvars.hcl",
    "scripts/install-docker.sh",
    "scripts/install-ecs-init.sh",
    "scripts/install-exec-dependencies.sh",
    "scripts/enable-ecs-agent-inferentia-support.sh",
    "scripts/al2023/gpu/install-nvidia-driver.sh",
    "scripts/al2023/gpu/install-dcgm.sh",
)
SOURCE_AMI = "al2023-ami-minimal-2023.12.20260817.0-kernel-6.1-x86_64"
"""`source_ami_al2023`: the minimal AL2023 image the build starts from."""

PACKAGES_AL2023 = (
    "amazon-efs-utils",
    "amazon-ssm-agent",
    "amazon-ec2-net-utils",
    "acpid",
    "iproute-tc",
    "ec2-instance-connect",
)
"""`packages_al2023` (variables.pkr.hcl), installed on every AL2023 ECS AMI."""

BASE_PROGRAMS = frozenset(
    {
        "awk", "bash", "cat", "chmod", "chown", "curl", "cut", "dnf", "grep", "head",
        "mkdir", "mktemp", "mv", "rm", "rpm", "sed", "sh", "sleep", "sudo", "systemctl",
        "tar", "tee", "tr", "uname", "yum",
    }
)  # fmt: skip
"""Run by the build's provisioners on the minimal source image (al2023.pkr.hcl inline steps and
the scripts of `SOURCE_FILES`)."""


@dataclass(frozen=True)
class AmiContents:
    """One ECS-optimized AL2023 AMI variant."""

    name: str
    ssm_parameter: str
    packages: tuple[str, ...]
    """What the build installs (`PACKAGES_AL2023` first), by package name."""
    programs: frozenset[str]
    """Commands on PATH."""
    paths: frozenset[str] = frozenset()
    """Executables outside PATH, by absolute path."""


_ECS = ("docker", "containerd", "runc", "amazon-ecs-init")
_ECS_PROGRAMS = frozenset({"docker", "containerd", "runc"})

AMIS: dict[Accelerator, AmiContents] = {
    "nvidia": AmiContents(
        name="ECS-optimized AL2023 GPU AMI (al2023gpu)",
        ssm_parameter=ECS_GPU_AMI_SSM_PARAMETER,
        packages=(
            *PACKAGES_AL2023,
            *_ECS,
            "dkms",
            "nvidia-release",
            "nvidia-driver",
            "nvidia-driver-cuda",
            "nvidia-fabricmanager",
            "nvidia-persistenced",
            "nvidia-container-toolkit",
            "pciutils",
            "datacenter-gpu-manager-4-core",
        ),
        programs=BASE_PROGRAMS | _ECS_PROGRAMS | {"nvidia-smi", "nvidia-ctk", "nv-hostengine"},
    ),
    "neuron": AmiContents(
        name="ECS-optimized AL2023 Neuron AMI (al2023neu)",
        ssm_parameter=ECS_NEURON_AMI_SSM_PARAMETER,
        packages=(
            *PACKAGES_AL2023,
            *_ECS,
            "aws-neuronx-dkms",
            "aws-neuronx-oci-hook",
            "oci-add-hooks",
            "aws-neuronx-tools",
        ),
        programs=BASE_PROGRAMS | _ECS_PROGRAMS,
        # aws-neuronx-tools installs its commands under /opt/aws/neuron/bin (Neuron
        # documentation, "Neuron system tools"), not on PATH.
        paths=frozenset(
            {
                "/opt/aws/neuron/bin/neuron-monitor",
                "/opt/aws/neuron/bin/neuron-monitor-prometheus.py",
            }
        ),
    ),
}
"""The AMI of each accelerator kind, as `pools.asg_pool` resolves it from SSM."""

AWS_CLI_PACKAGE = "awscli-2"
"""The AL2023 package of the `aws` command."""

BOOT_PACKAGES: dict[str, frozenset[str]] = {
    AWS_CLI_PACKAGE: frozenset({"aws"}),
    "amazon-cloudwatch-agent": frozenset(
        {"/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"}
    ),
}
"""Packages a user data may install at boot (`dnf install` from the AL2023 repositories, or
`rpm -U` of the package file) and the commands they provide: `awscli-2` the `aws` command (AL2023
User Guide, "AWS CLI"), `amazon-cloudwatch-agent` its control script (CloudWatch agent
documentation, "Install the CloudWatch agent")."""


def ami_of_parameter(name: str) -> AmiContents | None:
    """The AMI variant whose SSM parameter is `name`, or None."""
    return next((ami for ami in AMIS.values() if ami.ssm_parameter == name), None)
