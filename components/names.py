"""The rule for the short names a stack is built from (services, pools, the gateway's path), and
how names derived from the project and stack names are made valid for AWS.

A service name becomes its URL path prefix, its log group, its task family and part of its
target group's name (32 characters at most, stack-derived prefix included), so it is kept short
and DNS-safe: 2-21 lowercase letters, digits and '-', starting with a letter.
"""

from __future__ import annotations

import hashlib
import re

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,19}[a-z0-9]$")


def derived_name(
    text: str,
    *,
    invalid: str,
    max_length: int,
    lower: bool = False,
    reserved: tuple[str, ...] = (),
) -> str:
    """`text` (usually built from the project and stack names) as a name AWS accepts.

    Runs of characters matching the regex class `invalid` become '-', the text is lowercased
    when `lower`, `reserved` words are dropped and '-' is not doubled nor at either end. A name
    that had to change, or be cut to `max_length` characters, ends in '-' and 8 hex characters
    of a SHA-256 of `text`, so two stacks whose names differ only in what was dropped (`v_a`
    and `v-a`, `Dev` and `dev`) still get different names. A name needing no change is `text`.
    """
    name = text.lower() if lower else text
    name = re.sub(f"{invalid}+", "-", name)
    while True:
        kept = name
        for word in reserved:
            name = name.replace(word, "")
        if name == kept:
            break
    name = re.sub("-{2,}", "-", name).strip("-")
    if name == text and len(name) <= max_length:
        return name
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    head = name[: max_length - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}" if head else digest


def dns_label(text: str) -> str:
    """`text` as one DNS label: 1-63 lowercase letters, digits and '-' (see `derived_name`)."""
    return derived_name(text, invalid="[^a-z0-9-]", lower=True, max_length=63)
