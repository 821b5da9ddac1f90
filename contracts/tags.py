"""Tags the program writes for the policy pack to read, stated once.

The pack (`policy/guardrails/tags.py`) ships and runs alone, so it keeps its own copy;
`tests/contracts/test_policy_tags.py` fails when the two disagree.
"""

from __future__ import annotations

# On a target group: the longest request (a whole token stream) of the service behind it, in
# whole seconds. The service's deregistration delay is derived from it, so the pack's
# `deregistration-delay-covers-streams` checks the delay against this value rather than the
# ALB's idle timeout, which is sized for the slowest service on the ALB.
MAX_REQUEST_SECONDS = "ml:max-request-seconds"
# On any resource of a route: it serves a model (selects routes under the exposure rules'
# `scope: model-serving`).
SERVING = "ml:serving"
