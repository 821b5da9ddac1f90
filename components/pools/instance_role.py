"""The instance role of a pool's instances (pure documents and names).

The ECS agent registers, polls, pulls from ECR and writes logs with AWS's managed policy for
container instances; Session Manager is optional; a pool that pre-pulls images in its warm pool
may complete its own launch lifecycle hook.
"""

from __future__ import annotations

import json

#: AWS-managed policies the instance role may carry, by name (partition filled in at deploy).
ECS_INSTANCE_POLICY = "service-role/AmazonEC2ContainerServiceforEC2Role"
SSM_INSTANCE_POLICY = "AmazonSSMManagedInstanceCore"


def managed_policy_arn(partition: str, policy: str) -> str:
    """ARN of an AWS-managed IAM policy, e.g. `arn:aws:iam::aws:policy/AmazonSSM...`."""
    return f"arn:{partition}:iam::aws:policy/{policy}"


def instance_policies(ssm_access: bool) -> tuple[str, ...]:
    """AWS-managed policies of the instance role: what the ECS agent needs (register, poll,
    pull from ECR, write logs), plus Session Manager when `ssm_access`."""
    return (ECS_INSTANCE_POLICY, SSM_INSTANCE_POLICY) if ssm_access else (ECS_INSTANCE_POLICY,)


POOL_TAG = "ecs-inference:pool"
"""The tag (`<project>/<stack>/<pool>`, on the group only) that tells a pool's group from
another stack's group of the same logical name."""


def prepull_hook_policy(
    group_pattern: str, pool_tag: str, *, partition: str, region: str, account_id: str
) -> str:
    """What the pre-pull script needs: find its group (`DescribeAutoScalingInstances`, a List
    action IAM authorises only on "*") and complete the launch hook of its own group and no
    other of the account: the group ARN by name (`autoScalingGroup:*:autoScalingGroupName/
    <group_pattern>`; the id is AWS's, Service Authorization Reference resource type
    `autoScalingGroup`), and the group's `POOL_TAG` equal to `pool_tag`
    (`autoscaling:ResourceTag/<key>`, a condition key of that resource type)."""
    group = (
        f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:"
        f"autoScalingGroupName/{group_pattern}"
    )
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "CompleteOwnPrepullHook",
                    "Effect": "Allow",
                    "Action": "autoscaling:CompleteLifecycleAction",
                    "Resource": group,
                    "Condition": {
                        "StringEquals": {f"autoscaling:ResourceTag/{POOL_TAG}": pool_tag}
                    },
                },
                {
                    "Sid": "FindOwnGroup",
                    "Effect": "Allow",
                    "Action": "autoscaling:DescribeAutoScalingInstances",
                    "Resource": "*",
                },
            ],
        }
    )
