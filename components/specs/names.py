"""The rule for the short names a stack is built from (services, pools, the gateway's path).

A service name becomes its URL path prefix, its log group, its task family and part of its
target group's name (32 characters at most, stack-derived prefix included), so it is kept short
and DNS-safe: 2-21 lowercase letters, digits and '-', starting with a letter.
"""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,19}[a-z0-9]$")
