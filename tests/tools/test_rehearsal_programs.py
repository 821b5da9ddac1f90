"""The programs a user data runs, read from its shell text (tools/rehearsal/programs.py), and
checked against what the AMI contains (components/pools/ami_contents.py)."""

from __future__ import annotations

from ecs_inference.pools import ami_contents
from tools.rehearsal.programs import commands, installed, missing

GPU = ami_contents.AMIS["nvidia"]
NEURON = ami_contents.AMIS["neuron"]


def _programs(script: str) -> list[str]:
    return [program for program, _ in commands(script)]


def test_simple_commands_are_split_where_the_shell_splits_them():
    script = (
        "f() { curl -fsS x || echo unknown; }\n"
        'group=$(aws autoscaling describe --query "A[0].B")\n'
        'until [[ "$(f)" == InService ]]; do sleep 5; done\n'
        "echo 'a; b | c' >&2\n"
        "local token; export X=1\n"
        "sudo -E docker pull img && /usr/bin/nvidia-smi\n"
    )
    assert _programs(script) == ["curl", "aws", "sleep", "docker", "/usr/bin/nvidia-smi"]


def test_a_variable_of_a_plain_assignment_stands_for_its_value():
    script = 'local rpm=/tmp/amazon-cloudwatch-agent-1.3.rpm\nrpm -U --replacepkgs "$rpm"\n'
    ((_, words),) = list(commands(script))
    assert words[-1] == "/tmp/amazon-cloudwatch-agent-1.3.rpm"
    assert installed(words) == ami_contents.BOOT_PACKAGES["amazon-cloudwatch-agent"]


def test_a_program_counts_only_after_the_line_that_installs_it():
    used_first = "aws sts get-caller-identity\ndnf install -y awscli-2\n"
    assert [p for p, _ in missing(used_first, GPU, {})] == ["aws"]
    installed_first = "dnf install -y -q awscli-2 || sleep 10\naws sts get-caller-identity\n"
    assert missing(installed_first, GPU, {}) == []
    asked = "command -v aws >/dev/null 2>&1 && break\n"
    assert missing(asked, GPU, {}) == []


def test_each_ami_has_its_own_tools():
    monitor = "/opt/aws/neuron/bin/neuron-monitor | cat\n"
    assert missing(monitor, NEURON, {}) == []
    assert [p for p, _ in missing(monitor, GPU, {})] == ["/opt/aws/neuron/bin/neuron-monitor"]
    assert [p for p, _ in missing("nvidia-smi -L\n", NEURON, {})] == ["nvidia-smi"]
    assert missing("/usr/local/sbin/mine\n", GPU, {"/usr/local/sbin/mine": "#!/bin/bash\n"}) == []


def test_the_table_names_its_source_and_no_cli():
    assert ami_contents.SOURCE_AMI.startswith("al2023-ami-minimal-")
    for ami in ami_contents.AMIS.values():
        assert ami.packages[: len(ami_contents.PACKAGES_AL2023)] == ami_contents.PACKAGES_AL2023
        assert "aws" not in ami.programs and ami_contents.AWS_CLI_PACKAGE not in ami.packages
        assert ami_contents.ami_of_parameter(ami.ssm_parameter) is ami
