"""Amazon Bedrock model identifiers: foundation models and system (cross-Region) inference
profiles, and the ARNs IAM authorises a call to either on.

Stdlib only. A system inference profile id is a geography prefix and a foundation model id
(`us.anthropic.claude-3-5-haiku-20241022-v1:0`). Invoking it is authorised twice: on the profile
in the source Region, and on the foundation model in the destination Region the profile picks
("Prerequisites for inference profiles", Amazon Bedrock user guide).
"""

from __future__ import annotations

PROFILES_ONLY: dict[str, str] = {
    "anthropic.claude-3-5-sonnet-20240620-v1:0": "refused on demand in us-east-2 "
    "(aws-samples/bedrock-access-gateway#73, 2024-11-22)",
    "anthropic.claude-3-5-sonnet-20241022-v2:0": "refused on demand in us-east-1 "
    "(stackblitz-labs/bolt.diy#1102, 2025-01-15; qnabot-on-aws#836, 2025-10-02)",
    "anthropic.claude-3-7-sonnet-20250219-v1:0": "refused on demand (cline/cline#1952, 2025-02-25)",
    "anthropic.claude-3-opus-20240229-v1:0": "refused on demand (aws-samples/bedrock-chat#508, "
    "2024-08-28)",
    "anthropic.claude-sonnet-4-5-20250929-v1:0": "refused on demand (Laisky/one-api#245, "
    "2025-10-16)",
    "anthropic.claude-haiku-4-5-20251001-v1:0": "refused on demand (Laisky/one-api#245, "
    "2025-10-16)",
}
"""Foundation models Bedrock refuses to invoke on demand ("Invocation of model ID ... with
on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference
profile"), with the evidence and its date: they are invoked through a system inference profile
(`<geography>.<model id>`) instead."""

RETIRED: dict[str, tuple[str, str]] = {
    "anthropic.claude-3-5-haiku-20241022-v1:0": (
        '2026-06-19 (AWS model card "Claude 3.5 Haiku": lifecycle Legacy, checked 2026-12-01)',
        "anthropic.claude-haiku-4-5-20251001-v1:0",
    ),
}
"""Models past their Bedrock end-of-life date, with the source and the successor to use."""

REGION_GEOGRAPHIES: dict[str, str] = {
    "us-gov-": "us-gov",
    "us-": "us",
    "ca-": "ca",
    "eu-": "eu",
    "ap-northeast-1": "jp",
    "ap-": "apac",
}
"""The geography whose profile a source Region invokes (longest prefix first)."""

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
commercial Region, as AWS documents the global profiles). Amazon Bedrock user guide, "Supported
Regions and models for inference profiles" (checked 2026-12-01); a profile may route to fewer
Regions from some source Regions, never to others."""


def profile_for(model_id: str, region: str) -> str:
    """The system inference profile id that invokes `model_id` from `region`."""
    geography = next(
        (g for prefix, g in REGION_GEOGRAPHIES.items() if region.startswith(prefix)), "global"
    )
    return f"{geography}.{model_id}"


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
