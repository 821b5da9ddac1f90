"""Every image contract that declares the AWS calls its containers make (`aws_calls`).

Each entry maps a container's environment to its calls; a contract whose signature variables
are absent returns none, so every contract is asked about every container. A container of an
image no contract describes (a public image of another program) makes no declared call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from ecs_inference.contracts import engine, litellm, metrics, reranker, worker
from ecs_inference.contracts.aws_calls import AwsCall, s3_prefix_reads
from tools.rehearsal.tasks import ContainerCalls


def _reranker(environment: Mapping[str, str]) -> Sequence[AwsCall]:
    return [
        call
        for name in reranker.S3_PREFIX_READS
        for call in s3_prefix_reads(environment.get(name, ""), "stage the re-ranking model")
    ]


def _litellm(environment: Mapping[str, str]) -> Sequence[AwsCall]:
    """The proxy's calls (Bedrock, its IAM-token database login); each returns nothing for a
    container it does not describe."""
    return [
        *litellm.aws_calls(environment, _load_yaml),
        *litellm.database_aws_calls(environment),
    ]


def _load_yaml(text: str) -> Any:
    return yaml.safe_load(text)


CONTRACTS: Mapping[str, ContainerCalls] = {
    "contracts/engine.py": engine.aws_calls,
    "contracts/reranker.py": _reranker,
    "contracts/worker.py": worker.aws_calls,
    "contracts/metrics.py": metrics.aws_calls,
    "contracts/litellm.py": _litellm,
}
"""Each image contract that declares its containers' calls, by the contract's path (the docs'
table of declared calls, docs/fidelity.md, has one row per entry)."""
