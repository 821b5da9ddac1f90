"""Entry point the Pulumi CLI runs for this policy pack (``pulumi preview --policy-pack policy``).

It only serves the ``PolicyPack``: that starts the analyzer gRPC server, prints its port on
stdout and blocks, so nothing may import this module. The rules live in ``guardrails/``; the
server decodes each request once for all of them (``guardrails/analyzer.py``).
"""

from guardrails import all_policies
from guardrails.analyzer import serve
from pulumi_policy import EnforcementLevel

serve(
    name="ecs-inference-guardrails",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=all_policies(),
    description=(
        "Guardrails for ML/LLM inference on Amazon ECS: no accelerators on Fargate, no "
        "unauthenticated internet-facing model endpoint, Fargate sizes on the grid, and "
        "advisories for streaming, deployment safety, scaling and secrets."
    ),
)
