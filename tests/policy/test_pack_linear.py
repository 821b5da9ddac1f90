"""The pack is linear in the stack: on twice the stack (the benchmark's corpus copies,
``bench/policy_bench.py``) it reads each resource's properties as often as on one copy.

Counted, not timed (the host is loaded): every property read goes through the pack's readable
proxy (``guardrails.values``), so a rule that scans the stack for each resource it judges
(every EIP association for each EIP, every route for each route) reads more per resource as
the stack grows. ``docs/benchmarks.md`` has the timings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from guardrails import values

from bench import policy_bench


@contextmanager
def _counted_reads() -> Iterator[list[int]]:
    count = [0]
    original = values._Readable.__getitem__  # pyright: ignore[reportPrivateUsage]

    def counting(self: Any, key: Any) -> Any:
        count[0] += 1
        return original(self, key)

    values._Readable.__getitem__ = counting  # pyright: ignore[reportPrivateUsage]
    try:
        yield count
    finally:
        values._Readable.__getitem__ = original  # pyright: ignore[reportPrivateUsage]


def _reads_per_resource(pack: Any, copies: int) -> float:
    resources = [r for copy in range(copies) for r in policy_bench.corpus_copy(copy)]
    with _counted_reads() as count:
        pack.analyze(resources)
    return count[0] / len(resources)


def test_reads_per_resource_do_not_grow_with_the_stack(local_pack):
    one, two = _reads_per_resource(local_pack, 1), _reads_per_resource(local_pack, 2)
    assert two <= one * 1.01, (one, two)


def test_shared_task_definition_families_cost_each_task_definition_one_read(
    local_pack, monkeypatch: pytest.MonkeyPatch
):
    # Copies that keep their task definition families (``worker`` in many cases): every
    # launcher naming a family may run every revision of it, so findings grow with the
    # pairs, but each task definition is still read once per stack, not once per launcher.
    monkeypatch.setattr(policy_bench, "NAME_INPUTS", ("name", "clusterName", "functionName"))
    one, two = _reads_per_resource(local_pack, 1), _reads_per_resource(local_pack, 2)
    assert two <= one * 1.01, (one, two)
