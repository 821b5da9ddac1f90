"""Write a new stack file from the commented example: `make new-stack NAME=<stack> [REGION=...]`.

    python -m tools.new_stack staging --region eu-central-1

writes `Pulumi.staging.yaml` from `Pulumi.example.yaml` with the region (and the example images'
ECR registry) set to `--region` and a host name of the stack's own. It writes nothing else: the
names that must differ between stacks (Cognito domain, dashboard, alarms, physical names) are
derived by the program from the project and stack names, so copying a stack file never carries
another stack's names along. The stack name is checked against Pulumi's own rule (letters,
digits, '-', '_' and '.', at most 100; an `org/` or `org/project/` qualifier is allowed and not
part of the file name); an existing stack file is never overwritten.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ecs_inference.names import dns_label

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "Pulumi.example.yaml"
EXAMPLE_REGION = "us-east-1"
EXAMPLE_HOST = "models.example.internal"
# pulumi/pulumi's validateStackName: ^[A-Za-z0-9_.-]{1,100}$, the owner and project before '/'.
STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
REGION = re.compile(r"^[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d$")


class NewStackError(Exception):
    """The stack name or region is not one Pulumi or AWS accepts, or the file exists."""


def stack_part(name: str) -> str:
    """The stack of `name`, which may be qualified as `org/stack` or `org/project/stack`."""
    parts = name.split("/")
    if len(parts) > 3 or not all(parts):
        raise NewStackError(f"{name!r}: a stack is `stack`, `org/stack` or `org/project/stack`")
    stack = parts[-1]
    if not STACK_NAME.match(stack):
        raise NewStackError(
            f"{stack!r}: Pulumi stack names are 1-100 letters, digits, '-', '_' or '.'"
        )
    return stack


def render(example: str, stack: str, region: str) -> str:
    """The example's text for `stack` in `region`, comments kept."""
    if not REGION.match(region):
        raise NewStackError(f"{region!r} is not an AWS region name like eu-west-1")
    _, _, body = example.partition("config:\n")
    if not body:
        raise NewStackError(f"{EXAMPLE.name} has no `config:` key")
    body = body.replace(f"aws:region: {EXAMPLE_REGION}", f"aws:region: {region}", 1)
    body = body.replace(f".dkr.ecr.{EXAMPLE_REGION}.", f".dkr.ecr.{region}.")
    host = f"models.{dns_label(stack)}.example.internal"
    body = body.replace(f"domainName: {EXAMPLE_HOST}", f"domainName: {host}", 1)
    intro = (
        f"# Stack {stack!r}, written by `make new-stack` from {EXAMPLE.name}. Preview it with\n"
        f"# `make preview STACK={stack}`; every key: docs/configuration.md.\n"
    )
    return intro + "config:\n" + body


def write(name: str, region: str, directory: Path = ROOT) -> Path:
    """Write Pulumi.<stack>.yaml in `directory` and return its path."""
    stack = stack_part(name)
    path = directory / f"Pulumi.{stack}.yaml"
    if path.exists():
        raise NewStackError(f"{path.name} exists: edit it, or pick another stack name")
    path.write_text(render(EXAMPLE.read_text(), stack, region))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.new_stack", description=__doc__)
    parser.add_argument("name", help="the stack name, as for `pulumi stack init`")
    parser.add_argument("--region", default=EXAMPLE_REGION, help="AWS region (us-east-1)")
    args = parser.parse_args(argv)
    try:
        path = write(args.name, args.region)
    except NewStackError as error:
        print(f"make new-stack: {error}", file=sys.stderr)
        return 2
    stack = path.name[len("Pulumi.") : -len(".yaml")]
    print(f"wrote {path.name}; next: make preview STACK={stack}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
