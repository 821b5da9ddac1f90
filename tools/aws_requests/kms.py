"""KMS: keys and their key policies."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_inference.contracts.aws_limits import KMS_DELETION_WINDOW_DAYS
from tools.aws_requests.iam import policy_problems
from tools.aws_requests.registry import ApiRequest, Inputs, as_int, drop_none, maps, rule, tags


@maps("aws:kms/key:Key")
def _kms_key(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "kms",
            "CreateKey",
            drop_none(
                {
                    "Policy": i.get("policy"),
                    "Description": i.get("description"),
                    "KeyUsage": i.get("keyUsage"),
                    "KeySpec": i.get("customerMasterKeySpec"),
                    "MultiRegion": i.get("multiRegion"),
                    "BypassPolicyLockoutSafetyCheck": i.get("bypassPolicyLockoutSafetyCheck"),
                    "Tags": tags(i.get("tags"), "TagKey", "TagValue"),
                }
            ),
        )
    ]


@rule("aws:kms/key:Key")
def _kms_key_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    window = i.get("deletionWindowInDays")
    lo, hi = KMS_DELETION_WINDOW_DAYS
    if isinstance(window, (int, float)) and not lo <= window <= hi:
        yield f"deletionWindowInDays {as_int(window)} must be {lo}-{hi}"
    yield from policy_problems(i.get("policy"), "resource")
