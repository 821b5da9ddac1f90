"""AWS and provider limits, stated once.

Every limit the program designs around lives here, with its source. Components size names and
values against these; the offline preview checks what was registered against the same table.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# pulumi-aws autonames a resource `<logical name>-<7 random characters>` (provider/resources.go:
# `tfbridge.AutoName(...)`, `AutoNameOptions{Separator: "-", Randlen: 7}`).
AUTONAME_SEPARATOR = "-"
AUTONAME_RANDOM_CHARS = 7
# `namePrefix` is completed by the provider with a 26-character unique id (terraform's
# `id.PrefixedUniqueId`: a timestamp plus a counter).
NAME_PREFIX_SUFFIX_CHARS = 26
# Hex digits of the stable hash that keeps a shortened name unique per project, stack and logical
# resource (32 bits: a collision needs ~65k names in one account and region).
NAME_HASH_CHARS = 8


@dataclass(frozen=True)
class NameRule:
    """The provider's and the API's rule for one resource type's `name`."""

    max_length: int
    """Longest name the provider (and the API) accepts."""
    pattern: str = r"^[A-Za-z0-9-]+$"
    """What the whole name must match."""
    note: str = ""

    def fits_autoname(self, logical: str) -> bool:
        """Whether `<logical>-<7 random>` stays within the limit."""
        return len(logical) + len(AUTONAME_SEPARATOR) + AUTONAME_RANDOM_CHARS <= self.max_length


# Target groups and load balancers: 32 characters, alphanumerics and hyphens, no leading or
# trailing hyphen (provider/resources.go `aws_lb_target_group`/`aws_lb`: `Maxlen: 32`; ELBv2
# CreateTargetGroup / CreateLoadBalancer docs).
ELBV2_NAME = NameRule(
    max_length=32,
    pattern=r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$",
    note="alphanumerics and hyphens, not starting or ending with a hyphen",
)


def fitted_name(logical: str, rule: NameRule, *, scope: str, salt: str = "") -> str | None:
    """An explicit physical name for `logical` when the provider's autoname would not fit.

    Returns None when `<logical>-<7 random>` fits `rule` (the provider autonames it, exactly as
    before, so existing stacks see no change). Otherwise returns `<logical, truncated>-<hash>`,
    where the hash covers `scope` (project and stack, so two stacks in one account and region
    never collide, which autonaming guaranteed with its random suffix) and `salt` (the inputs
    that force a replacement, so a replacement gets a new name and create-before-delete still
    works with an explicit name). Deterministic: the same inputs give the same name on every run.
    """
    if rule.fits_autoname(logical):
        return None
    digest = hashlib.sha256(f"{scope}\0{logical}\0{salt}".encode()).hexdigest()[:NAME_HASH_CHARS]
    keep = rule.max_length - len(AUTONAME_SEPARATOR) - NAME_HASH_CHARS
    head = re.sub(r"[^A-Za-z0-9-]", "-", logical)[:keep].rstrip("-")
    name = f"{head}{AUTONAME_SEPARATOR}{digest}" if head else digest
    if not re.match(rule.pattern, name):  # pragma: no cover - the construction above guarantees it
        raise ValueError(f"fitted name {name!r} breaks {rule}")
    return name
