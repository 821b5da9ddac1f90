"""Tags the pack reads: its own copy of the program's `contracts/tags.py`.

The pack ships and runs alone (`pulumi preview --policy-pack policy`), so it cannot import the
program's contracts; `tests/contracts/test_policy_tags.py` fails when the copies disagree.
"""

from __future__ import annotations

# On a target group: the longest request (a whole token stream) of the service behind it, in
# whole seconds; the deregistration delay must cover it.
MAX_REQUEST_SECONDS = "ml:max-request-seconds"
# On any resource of a route: it serves a model (scope model-serving).
SERVING = "ml:serving"
