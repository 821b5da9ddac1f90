"""Amazon Bedrock model identifiers: foundation models and system (cross-Region) inference
profiles, and the ARNs IAM authorises a call to either on.

Stdlib only. A system inference profile id is a geography prefix and a foundation model id
(`us.anthropic.claude-3-5-haiku-20241022-v1:0`). Invoking it is authorised twice: on the profile
in the source Region, and on the foundation model in the destination Region the profile picks
("Prerequisites for inference profiles", Amazon Bedrock user guide).
"""

from __future__ import annotations

PROFILE_GEOGRAPHIES: dict[str, tuple[str, ...]] = {
    "us": ("us-east-1", "us-east-2", "us-west-2"),
    "us-gov": ("us-gov-east-1", "us-gov-west-1"),
    "eu": ("eu-central-1", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-3"),
    "apac": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-4",
    ),
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "au": ("ap-southeast-2", "ap-southeast-4"),
    "ca": ("ca-central-1", "ca-west-1"),
    "global": (),
}
"""Destination Regions of the system inference profiles by geography prefix (empty: every
commercial Region, as AWS documents the global profiles)."""


def profile_geography(model_id: str) -> str | None:
    """The geography prefix of a system inference profile id (None: a foundation model id)."""
    head, _, rest = model_id.partition(".")
    if head in PROFILE_GEOGRAPHIES and "." in rest:
        return head
    return None


def foundation_model_id(model_id: str) -> str:
    """The foundation model a model id invokes (the id itself, or a profile's model)."""
    return model_id.split(".", 1)[1] if profile_geography(model_id) else model_id


def invoke_resources(model_id: str, region: str) -> tuple[str, ...]:
    """The ARNs (with `{partition}` and `{account}` placeholders) `bedrock:InvokeModel*` is
    authorised on when `model_id` is invoked from `region`: the foundation model in `region`;
    for a profile, the profile in `region` and the model in each destination Region (`*` for a
    global profile, whose destinations are every commercial Region)."""
    geography = profile_geography(model_id)
    model = foundation_model_id(model_id)
    if geography is None:
        return (f"arn:{{partition}}:bedrock:{region}::foundation-model/{model}",)
    regions = PROFILE_GEOGRAPHIES[geography] or ("*",)
    return (
        f"arn:{{partition}}:bedrock:{region}:{{account}}:inference-profile/{model_id}",
        *(f"arn:{{partition}}:bedrock:{r}::foundation-model/{model}" for r in regions),
    )
