"""The ecs-inference CrossGuard rules, one module per resource family.

``all_policies()`` is what ``policy/__main__.py`` hands to ``PolicyPack``; tests import the rule
modules directly (``__main__.py`` blocks serving gRPC).
"""

from __future__ import annotations

from pulumi_policy import Policy

from . import deployment, exposure, fargate, notes, secrets, seeds, streaming


def all_policies() -> list[Policy]:
    """Every policy of the pack, mandatory ones first; ``guardrail-notes`` last (it reports
    what the others left behind in the same ``AnalyzeStack`` call)."""
    return [
        *fargate.POLICIES,
        *exposure.POLICIES,
        *streaming.POLICIES,
        *deployment.POLICIES,
        *secrets.POLICIES,
        *seeds.POLICIES,
        *notes.POLICIES,
    ]
