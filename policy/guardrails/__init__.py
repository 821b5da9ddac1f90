"""The ecs-inference CrossGuard rules, one module (or package) per resource family.

``all_policies()`` is what ``policy/__main__.py`` hands to ``PolicyPack``; tests import the rule
modules directly (``__main__.py`` blocks serving gRPC).
"""

from __future__ import annotations

from pulumi_policy import Policy

from . import containers, deployment, exposure, fargate, notes, rollouts, streaming


def all_policies() -> list[Policy]:
    """Every policy of the pack, by family; ``guardrail-notes`` last (it reports what the
    others left behind in the same ``AnalyzeStack`` call)."""
    return [
        *fargate.POLICIES,
        *exposure.POLICIES,
        *streaming.POLICIES,
        *deployment.POLICIES,
        *rollouts.POLICIES,
        *containers.POLICIES,
        *notes.POLICIES,
    ]
