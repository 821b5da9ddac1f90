"""The AWS calls a container makes at run time, as each image's contract declares them.

Stdlib only. A contract module declares `aws_calls(environment)`: given a container's
environment (name -> value) it returns the calls the image's code makes with the task role, or
nothing when the container is not one of its images (its signature variables are absent). The
offline preview's runtime rehearsal (`tools/rehearsal/`) evaluates every declared call against
the task role, so a grant that the image's code needs and the stack does not give fails the
preview instead of the first request.

Resources are ARNs with `{partition}`, `{region}` and `{account}` placeholders (and `{cluster}`,
`{task}` for calls on the container's own task), filled in for the stack that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Environment = Mapping[str, str]


@dataclass(frozen=True)
class AwsCall:
    """One API call the container's code makes, and on which resource IAM authorises it."""

    action: str
    """`service:Action` as IAM names it (e.g. `s3:GetObject`)."""
    resource: str
    """The ARN IAM evaluates, with `{partition}`, `{region}` and `{account}` placeholders."""
    why: str
    """What the image does with it (shown when the task role does not allow it)."""
    context: tuple[tuple[str, str], ...] = ()
    """Condition keys the request carries (e.g. `("s3:prefix", "llama/")`)."""

    def bound(self, **values: str) -> AwsCall:
        """The call with the placeholders of its resource and context filled in (`partition`,
        `region`, `account`, and for task-scoped calls `cluster` and `task`)."""

        def fill(text: str) -> str:
            return text.format(**values)

        return AwsCall(
            self.action,
            fill(self.resource),
            self.why,
            tuple((k, fill(v)) for k, v in self.context),
        )


def has_all(environment: Environment, names: Sequence[str]) -> bool:
    """True when every one of `names` is set (a contract's signature)."""
    return all(environment.get(n) for n in names)


def s3_prefix_reads(uri: str, why: str, sample: str = "config.json") -> tuple[AwsCall, ...]:
    """What reading everything under `s3://bucket/prefix/` takes: ListObjectsV2 on the bucket
    with that prefix (IAM action s3:ListBucket, condition key s3:prefix) and GetObject on each
    object (the file `sample` stands for them, default a checkpoint's `config.json`); nothing
    for a non-S3 location."""
    if not uri.startswith("s3://"):
        return ()
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    listed = f"{prefix}/" if prefix else ""
    key = f"{listed}{sample}"
    return (
        AwsCall(
            "s3:ListBucket",
            f"arn:{{partition}}:s3:::{bucket}",
            f"list {uri} ({why})",
            (("s3:prefix", listed),),
        ),
        AwsCall("s3:GetObject", f"arn:{{partition}}:s3:::{bucket}/{key}", f"read {uri} ({why})"),
    )


def sqs_queue_arn(url: str) -> str | None:
    """`https://sqs.<region>.amazonaws.com/<account>/<name>` -> the queue's ARN (None: not an
    SQS queue URL)."""
    parts = url.removeprefix("https://").split("/")
    if len(parts) != 3 or not parts[0].startswith("sqs.") or not parts[1].isdigit():
        return None
    region = parts[0].split(".")[1]
    return f"arn:{{partition}}:sqs:{region}:{parts[1]}:{parts[2]}"
