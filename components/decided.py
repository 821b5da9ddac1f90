"""What every feature's decisions record alike: the input they were decided from, what the stack
placed around the component, and the lines the preview prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

InputT = TypeVar("InputT")
PlacementT = TypeVar("PlacementT")


@dataclass(frozen=True, kw_only=True)
class Decided(Generic[InputT, PlacementT]):
    """A component's decisions: a feature's own class adds what it decides."""

    input: InputT
    """The component's input (its stack-file section), as given or as the stack filled it."""
    placement: PlacementT
    """What the stack decided around it (rule priority, idle timeout, the services on a pool)."""
    lines: tuple[str, ...] = ()
    """The decision lines (the preview prints them); default none."""
