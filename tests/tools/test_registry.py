"""The rehearsal reads an image reference's ECR repository as Docker and ECR do
(tools/rehearsal/registry.py), independently of the code that writes the pull grant."""

from __future__ import annotations

import pytest

from tools.rehearsal.registry import ImageReferenceError, ecr_repository

REGISTRY = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
REPOSITORY = "arn:aws:ecr:eu-west-1:123456789012:repository/"


@pytest.mark.parametrize(
    ("image", "partition", "repository"),
    [
        (f"{REGISTRY}/team/vllm:v1", "aws", REPOSITORY + "team/vllm"),
        (f"{REGISTRY}/vllm@sha256:{'a' * 64}", "aws", REPOSITORY + "vllm"),
        (f"{REGISTRY}/a/b:c@sha256:{'b' * 64}", "aws", REPOSITORY + "a/b"),
        ("123456789012.dkr-ecr.eu-west-1.on.aws/x:1", "aws", REPOSITORY + "x"),
        (
            "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/m:1",
            "aws-cn",
            "arn:aws-cn:ecr:cn-north-1:123456789012:repository/m",
        ),
        ("ghcr.io/berriai/litellm:main-v1.108.7", "aws", None),
        ("vllm/vllm-openai:v0.11.0", "aws", None),
        ("localhost:5000/x:1", "aws", None),
    ],
)
def test_the_repository_is_the_path_of_an_ecr_registry(
    image: str, partition: str, repository: str | None
) -> None:
    assert ecr_repository(image, partition) == repository


@pytest.mark.parametrize(
    "image",
    [
        f"{REGISTRY}/Team/vllm:v1",  # ECR repository names are lowercase
        f"{REGISTRY}/vllm:{'t' * 129}",  # a tag is at most 128 characters
        f"{REGISTRY}/vllm@sha256:xyz",
        "123456789012.dkr.ecr.nowhere/x:1",
    ],
)
def test_a_reference_ecr_cannot_resolve_is_refused(image: str) -> None:
    with pytest.raises(ImageReferenceError):
        ecr_repository(image, "aws")
