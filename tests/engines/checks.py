"""Assertions the engine tests share."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_inference.engines.base import PresetError


def fails_at(factory: Callable[[], object], path: str, fragment: str) -> None:
    """Building the launch fails with one line that starts with the config path `path` and
    says `fragment`."""
    with pytest.raises(PresetError) as caught:
        factory()
    message = str(caught.value)
    assert message.startswith(path + ":"), message
    assert fragment in message
    assert "\n" not in message
