"""ECR: repositories."""

from __future__ import annotations

from tools.aws_requests.registry import ApiRequest, Inputs, drop_none, maps, single, tags


@maps("aws:ecr/repository:Repository")
def _ecr_repository(i: Inputs, name: str | None) -> list[ApiRequest]:
    scan = single(i.get("imageScanningConfiguration"))
    return [
        ApiRequest(
            "ecr",
            "CreateRepository",
            drop_none(
                {
                    "repositoryName": name,
                    "imageTagMutability": i.get("imageTagMutability"),
                    "imageScanningConfiguration": scan,
                    "encryptionConfiguration": (i.get("encryptionConfigurations") or [None])[0],
                    "tags": tags(i.get("tags")),
                }
            ),
        )
    ]
