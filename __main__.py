"""ecs-inference: load the stack config, plan, build the platform, export what callers need."""

import pulumi
import pulumi_aws as aws
from pulumi.runtime.config import is_config_secret

from ecs_inference import cost
from ecs_inference.config.issues import ADVISORY_PREFIX, ConfigError
from ecs_inference.config.load import plan_stack
from ecs_inference.config.stack import StackConfig
from ecs_inference.config.stack_file import PLATFORM_KEY, program_stack_file
from ecs_inference.network.discover import discover
from ecs_inference.operations.alarms import alarm_metric_count
from ecs_inference.plan import PLATFORM_NAME, Plan, build_plan
from ecs_inference.platform import InferencePlatform

stack = pulumi.get_stack()
# The stack file names the line of each problem and which values were set with `--secret` (the
# CLI marks the structured key secret as a whole).
source = program_stack_file(stack)


def plan_of(config: StackConfig) -> Plan:
    existing = config.network.existing
    return build_plan(
        config,
        stack,
        # The engines' S3 clients need it (IMDS is blocked for tasks); the provider's own
        # setting, else what the provider resolves (AWS_REGION of the deploying shell).
        region=pulumi.Config("aws").get("region") or aws.get_region().region,
        project=pulumi.get_project(),
        # An existing VPC is read before the plan, which checks it.
        network_lookup=discover(existing) if existing is not None else None,
    )


try:
    plan = plan_stack(
        pulumi.Config("ecs-inference").get_object("platform"),
        stack,
        plan_of,
        source=source,
        key_secret=is_config_secret(PLATFORM_KEY),
    )
except ConfigError as error:
    # RunError: the CLI prints the message alone, without a Python stack trace.
    raise pulumi.RunError(str(error)) from None

# Decisions that predict an outage: the CLI prints each as a warning, at its file and line.
for advisory in plan.advisories:
    pulumi.log.warn(f"{ADVISORY_PREFIX}{source.locate(advisory) if source else advisory}")

platform = InferencePlatform(PLATFORM_NAME, plan)

pulumi.export("vpcId", platform.network.vpc_id)
pulumi.export("clusterName", platform.cluster.name)
pulumi.export("endpointDnsName", platform.endpoint.dns_name)
pulumi.export("oauthTokenUrl", platform.endpoint.token_url)
pulumi.export("apiClientId", platform.endpoint.api_client_id)
pulumi.export("apiScopes", platform.endpoint.api_scopes)
# Base URL of every service: models speak the OpenAI API under it (`<url>v1/chat/completions`),
# re-rankers the rerank API (`<url>v1/rerank`).
pulumi.export(
    "serviceUrls",
    {svc: platform.endpoint.service_url(svc) for svc in plan.config.service_names()},
)
if platform.gateway is not None and plan.gateway is not None:
    # One OpenAI-compatible endpoint for every model (`<url>v1/chat/completions`); LiteLLM's key
    # goes in `x-litellm-api-key`, the JWT in `Authorization`.
    pulumi.export("gatewayUrl", platform.endpoint.service_url(plan.gateway.input.path))
if platform.workers:
    pulumi.export("queueUrls", {name: w.queue_url for name, w in platform.workers.items()})
    results = {n: w.result_queue.url for n, w in platform.workers.items() if w.result_queue}
    if results:
        pulumi.export("resultQueueUrls", results)
# The sizing and timeout decisions, so `pulumi stack output decisions` answers "why this size?".
pulumi.export("decisions", plan.decisions)
# $/h and $/month at minimum, steady and maximum scale (`pulumi stack output cost`; the preview
# prints it and the pull-request workflow diffs it against the base branch).
pulumi.export(
    "cost",
    cost.estimate(
        plan,
        alarms_metrics=alarm_metric_count(plan.alarm_specs()),
    ).to_json(),
)
if platform.images is not None:
    # The digest references this stack built and runs (images.build: true).
    pulumi.export("images", platform.images.references)
